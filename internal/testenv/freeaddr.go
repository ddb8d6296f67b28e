package testenv

import (
	"net"
	"testing"
)

// FreeAddr is a 127.0.0.1 address with a port nothing listens on now, for
// a server a test starts.
func FreeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}
