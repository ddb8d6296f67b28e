package deps

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// LookupFunc resolves a host name to addresses.
type LookupFunc func(ctx context.Context, host string) ([]netip.Addr, error)

func defaultLookup(ctx context.Context, host string) ([]netip.Addr, error) {
	return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
}

// AddressError is a connection refused because the name led to an address
// the allowlist entry does not permit.
type AddressError struct {
	Host string
	Addr netip.Addr
}

func (e *AddressError) Error() string {
	return fmt.Sprintf("%s resolves to %s, a loopback, private or link-local address, and the %s entry that allows it does not name such an address or localhost",
		e.Host, e.Addr, AllowSetting)
}

// pickAddr resolves host and returns the address to connect to: the first
// the entry permits. Any refused address fails the whole lookup, so a name
// that answers with both a public and a private address (DNS rebinding's
// usual shape) is refused rather than tried address by address.
func pickAddr(ctx context.Context, lookup LookupFunc, host string, private bool) (netip.Addr, error) {
	if ip, err := netip.ParseAddr(host); err == nil {
		if !private && !publicAddr(ip) {
			return netip.Addr{}, &AddressError{Host: host, Addr: ip}
		}
		return ip, nil
	}
	addrs, err := lookup(ctx, host)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("resolving %s: %w", host, err)
	}
	if len(addrs) == 0 {
		return netip.Addr{}, fmt.Errorf("resolving %s: no addresses", host)
	}
	for _, a := range addrs {
		if !private && !publicAddr(a) {
			return netip.Addr{}, &AddressError{Host: host, Addr: a.Unmap()}
		}
	}
	return addrs[0].Unmap(), nil
}

// checkedDialer dials only addresses the allowlist permits: names are
// resolved here and checked, and net.Dialer.Control checks the address
// actually connected to again, so a redirect to another name, or a
// resolver that answers differently the second time, cannot reach an
// internal address.
type checkedDialer struct {
	lookup  LookupFunc
	allow   Allowlist
	timeout time.Duration
}

func (d checkedDialer) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("dialing %s: %w", addr, err)
	}
	port, _ := strconv.Atoi(portStr)
	private := d.privateAllowed(host, port)
	ip, err := pickAddr(ctx, d.lookup, host, private)
	if err != nil {
		return nil, err
	}
	nd := net.Dialer{
		Timeout: d.timeout,
		Control: func(_, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return fmt.Errorf("dialing %s: %w", address, err)
			}
			if !private && !publicAddr(ap.Addr()) {
				return &AddressError{Host: host, Addr: ap.Addr().Unmap()}
			}
			return nil
		},
	}
	return nd.DialContext(ctx, network, net.JoinHostPort(ip.String(), portStr))
}

// privateAllowed says whether an allowlist entry for host:port names a
// loopback, private or link-local address or localhost. Redirects may lead
// to hosts the allowlist does not name (registries send blobs to storage
// hosts); those must be public.
func (d checkedDialer) privateAllowed(host string, port int) bool {
	host = strings.ToLower(host)
	for _, e := range d.allow.entries {
		if e.private && e.loc.host == host && (e.loc.port == 0 || e.loc.port == port) {
			return true
		}
	}
	return false
}

// httpClient is the client ORAS fetches with: the checked dialer, no
// proxy from the environment (a proxy would connect where the check cannot
// see), TLS verified.
func (d checkedDialer) httpClient() *http.Client {
	t := &http.Transport{
		Proxy:                 nil,
		DialContext:           d.dial,
		ForceAttemptHTTP2:     true,
		TLSHandshakeTimeout:   d.timeout,
		ResponseHeaderTimeout: d.timeout,
		MaxIdleConns:          10,
		IdleConnTimeout:       30 * time.Second,
	}
	return &http.Client{
		Transport: t,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= 5 {
				return fmt.Errorf("fetching %s: more than 5 redirects", via[0].URL)
			}
			return nil
		},
	}
}
