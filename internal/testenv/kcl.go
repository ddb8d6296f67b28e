package testenv

import (
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// KCLRuntime returns the folder hack/kcl.sh installed the KCL runtime in
// (KUSIONPR_KCL_RUNTIME): a Python environment whose bin/python3 imports
// kcl_lib.
func KCLRuntime(t testing.TB) string {
	t.Helper()
	p := os.Getenv("KUSIONPR_KCL_RUNTIME")
	if p == "" {
		missing(t, "KUSIONPR_KCL_RUNTIME is not set: run `make test`, or `hack/kcl.sh install` and `eval \"$(hack/kcl.sh env)\"`")
	}
	if _, err := os.Stat(filepath.Join(p, "bin", "python3")); err != nil {
		missing(t, "the KCL runtime: "+err.Error()+" (hack/kcl.sh install)")
	}
	return p
}

// KCLServed are the settings that send Kusion's names
// (github.com/KusionStack, ghcr.io/kusionstack) to the local git server and
// registry serving internal/testenv/kclpkgs, as an air-gapped operator's
// would, through proxies that count what reaches each server.
type KCLServed struct {
	// Allow and Mirrors are KUSIONPR_KCL_ALLOW's and KUSIONPR_KCL_MIRRORS's
	// values.
	Allow, Mirrors string
	// OCI and Git count the requests reaching the registry and the git
	// server.
	OCI, Git *Counting
}

// KCLSettings serves the test environment's KCL packages under Kusion's
// names (see KCLServed).
func KCLSettings(t testing.TB) KCLServed {
	t.Helper()
	registry, gitURL := KCLSources(t)
	s := KCLServed{OCI: CountingProxy(t, "http://"+registry), Git: CountingProxy(t, gitURL)}
	s.Allow = s.OCI.HostPort() + "/kusionstack," + s.Git.HostPort() + "/KusionStack"
	s.Mirrors = "ghcr.io/kusionstack=" + s.OCI.HostPort() + "/kusionstack,github.com/KusionStack=" + s.Git.HostPort() + "/KusionStack"
	return s
}

// Requests is how many requests reached the servers.
func (s KCLServed) Requests() int64 { return s.OCI.Requests() + s.Git.Requests() }

// Counting is a reverse proxy in front of a test server that counts the
// requests passing through: what a client asked of the server.
type Counting struct {
	srv *httptest.Server
	n   atomic.Int64
}

// CountingProxy starts a Counting proxy to target (http://host:port).
func CountingProxy(t testing.TB, target string) *Counting {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	c := &Counting{}
	rp := httputil.NewSingleHostReverseProxy(u)
	c.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.n.Add(1)
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(c.srv.Close)
	return c
}

// HostPort is the proxy's address.
func (c *Counting) HostPort() string { return strings.TrimPrefix(c.srv.URL, "http://") }

// Requests is how many requests passed through.
func (c *Counting) Requests() int64 { return c.n.Load() }

// KCLQuickstartMod is the kcl.mod `kusion init` writes for its
// quickstart: kam from git, service and network from OCI, which
// KCLSettings serves.
const KCLQuickstartMod = `[package]
name = "quickstart"
version = "0.1.0"

[dependencies]
kam = { git = "https://github.com/KusionStack/kam.git", tag = "0.2.0" }
service = { oci = "oci://ghcr.io/kusionstack/service", tag = "0.1.0" }
network = { oci = "oci://ghcr.io/kusionstack/network", tag = "0.2.0" }

[profile]
entries = ["main.k"]
`

// KCLQuickstartMain is the quickstart's main.k, as `kusion init` writes it.
const KCLQuickstartMain = `import kam.v1.app_configuration as ac
import service
import service.container as c
import network as n

quickstart: ac.AppConfiguration {
    workload: service.Service {
        containers: {
            quickstart: c.Container {
                image: "kusionstack/kusion-quickstart:latest"
            }
        }
    }
    accessories: {
        "network": n.Network {
            ports: [n.Port {port: 8080}]
        }
    }
}
`

// Listener is a loopback TCP listener that accepts and counts connections
// and says nothing: what a dependency on a loopback port would reach.
// It returns its address and how many connections it saw.
func Listener(t testing.TB) (addr string, accepted func() int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	var n atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			n.Add(1)
			c.Close()
		}
	}()
	return ln.Addr().String(), n.Load
}
