package deps

import (
	"fmt"
	"net"
	"net/netip"
	"strings"
)

// The settings an operator sets, named in errors so the message says what to change.
const (
	AllowSetting   = "KUSIONPR_KCL_ALLOW"
	MirrorsSetting = "KUSIONPR_KCL_MIRRORS"
)

// DefaultAllow is the allowlist when the operator sets none: the
// organisations whose packages Kusion's own stacks use.
const DefaultAllow = "github.com/KusionStack/,github.com/kcl-lang/,ghcr.io/kusionstack/,ghcr.io/kcl-lang/"

// location is where a package is fetched from: a host, a port (0 for the
// scheme's default) and a path, plus whether it is plain HTTP.
type location struct {
	host  string // lower case, no brackets
	port  int
	path  string // without leading slash
	plain bool
}

func (l location) hostport() string {
	if l.port == 0 {
		return l.host
	}
	return net.JoinHostPort(l.host, fmt.Sprint(l.port))
}

func (l location) String() string {
	s := l.hostport()
	if l.path != "" {
		s += "/" + l.path
	}
	return s
}

// defaultPort is the port a connection to l goes to.
func (l location) defaultPort() int {
	if l.port != 0 {
		return l.port
	}
	if l.plain {
		return 80
	}
	return 443
}

// parseLocation reads host[:port][/path], with an optional http:// or
// https:// in front (http:// makes it plain).
func parseLocation(s string) (location, error) {
	var l location
	if rest, ok := strings.CutPrefix(s, "http://"); ok {
		s, l.plain = rest, true
	} else if rest, ok := strings.CutPrefix(s, "https://"); ok {
		s = rest
	}
	hp, path, _ := strings.Cut(s, "/")
	if hp == "" {
		return l, fmt.Errorf("%q names no host", s)
	}
	if strings.ContainsAny(s, " \t?#@\\") {
		return l, fmt.Errorf("%q is not host[:port][/path]", s)
	}
	host, port := hp, ""
	if h, p, err := net.SplitHostPort(hp); err == nil {
		host, port = h, p
	}
	l.host = strings.ToLower(strings.Trim(host, "[]"))
	if port != "" {
		if _, err := fmt.Sscan(port, &l.port); err != nil || l.port <= 0 || l.port > 65535 {
			return l, fmt.Errorf("%q has no valid port", s)
		}
	}
	for _, seg := range strings.Split(path, "/") {
		if seg == "." || seg == ".." {
			return l, fmt.Errorf("%q has a . or .. path segment", s)
		}
	}
	l.path = path
	return l, nil
}

// allowEntry is one entry of the allowlist.
type allowEntry struct {
	loc location
	// private says the entry itself names a loopback, private or
	// link-local address, or localhost: connections for it may go there.
	private bool
}

// Allowlist is the hosts and path prefixes packages may come from.
type Allowlist struct {
	entries []allowEntry
}

// ParseAllow reads the allowlist setting: entries host[:port][/path-prefix]
// separated by commas or white space. An empty value is DefaultAllow.
func ParseAllow(s string) (Allowlist, error) {
	if strings.TrimSpace(s) == "" {
		s = DefaultAllow
	}
	var a Allowlist
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\n' || r == '\t' }) {
		if strings.Contains(f, "://") {
			return a, fmt.Errorf("%s entry %q: write host[:port][/path-prefix], without a scheme", AllowSetting, f)
		}
		l, err := parseLocation(f)
		if err != nil {
			return a, fmt.Errorf("%s entry: %w", AllowSetting, err)
		}
		e := allowEntry{loc: l, private: l.host == "localhost"}
		if ip, err := netip.ParseAddr(l.host); err == nil && !publicAddr(ip) {
			e.private = true
		}
		a.entries = append(a.entries, e)
	}
	return a, nil
}

// match returns the entry that allows l: the same host, the same port
// (an entry without one allows the scheme's default port only), and a path
// that is the entry's or under it, whole segments compared.
func (a Allowlist) match(l location) (allowEntry, bool) {
	for _, e := range a.entries {
		if e.loc.host != l.host {
			continue
		}
		if e.loc.port != 0 && e.loc.port != l.defaultPort() {
			continue
		}
		if e.loc.port == 0 && (l.plain || l.defaultPort() != 443) {
			// An entry without a port is for HTTPS on its default port;
			// plain HTTP is allowed only where the entry names the port.
			continue
		}
		prefix := strings.Trim(e.loc.path, "/")
		if prefix == "" || l.path == prefix || strings.HasPrefix(l.path, prefix+"/") {
			return e, true
		}
	}
	return allowEntry{}, false
}

func (a Allowlist) String() string {
	s := make([]string, len(a.entries))
	for i, e := range a.entries {
		s[i] = e.loc.String()
	}
	return strings.Join(s, ",")
}

// publicAddr says whether ip is a routable public address: not loopback,
// private, link-local, unspecified, multicast or carrier-grade NAT space.
func publicAddr(ip netip.Addr) bool {
	ip = ip.Unmap()
	if ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() ||
		ip.IsInterfaceLocalMulticast() || ip.IsMulticast() || ip.IsUnspecified() {
		return false
	}
	for _, p := range []string{"100.64.0.0/10", "0.0.0.0/8", "192.0.0.0/24", "198.18.0.0/15", "64:ff9b::/96", "64:ff9b:1::/48"} {
		// NAT64 prefixes may embed a private IPv4 address.
		if netip.MustParsePrefix(p).Contains(ip) {
			return false
		}
	}
	return true
}

// mirror rewrites a location's prefix to another.
type mirror struct {
	from, to location
}

// Mirrors is the operator's prefix rewrites, applied before the allowlist.
type Mirrors struct {
	list []mirror
}

// ParseMirrors reads the mirror setting: entries from=to separated by
// commas or white space, each side host[:port][/path], the target
// optionally http:// for a registry or git server without TLS.
func ParseMirrors(s string) (Mirrors, error) {
	var m Mirrors
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\n' || r == '\t' }) {
		from, to, ok := strings.Cut(f, "=")
		if !ok {
			return m, fmt.Errorf("%s entry %q: write from=to", MirrorsSetting, f)
		}
		if strings.Contains(from, "://") {
			return m, fmt.Errorf("%s entry %q: write the source prefix without a scheme", MirrorsSetting, f)
		}
		fl, err := parseLocation(from)
		if err != nil {
			return m, fmt.Errorf("%s entry %q: %w", MirrorsSetting, f, err)
		}
		tl, err := parseLocation(to)
		if err != nil {
			return m, fmt.Errorf("%s entry %q: %w", MirrorsSetting, f, err)
		}
		m.list = append(m.list, mirror{from: fl, to: tl})
	}
	return m, nil
}

// rewrite applies the first mirror whose prefix l is under; the target's
// scheme replaces l's.
func (m Mirrors) rewrite(l location) (location, bool) {
	for _, r := range m.list {
		if r.from.host != l.host || r.from.port != l.port {
			continue
		}
		p := strings.Trim(r.from.path, "/")
		if p != "" && l.path != p && !strings.HasPrefix(l.path, p+"/") {
			continue
		}
		out := r.to
		rest := strings.TrimPrefix(strings.TrimPrefix(l.path, p), "/")
		out.path = strings.Trim(strings.Trim(r.to.path, "/")+"/"+rest, "/")
		if !r.to.plain && isLoopbackHost(r.to.host) {
			// A registry or git server on this machine is plain HTTP, as
			// Docker and ORAS assume for localhost.
			out.plain = true
		}
		return out, true
	}
	return l, false
}

func isLoopbackHost(h string) bool {
	if h == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(h)
	return err == nil && ip.IsLoopback()
}
