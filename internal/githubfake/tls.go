package githubfake

import (
	"crypto/tls"
	"time"

	"github.com/kusionpr/kusionpr/internal/testca"
)

// testCA is a certificate authority made for one test and the server
// certificate it signed for 127.0.0.1.
type testCA struct {
	pem  []byte
	leaf tls.Certificate
}

// newTestCA makes an authority and, signed by it, a certificate for
// 127.0.0.1 and localhost, both valid for a day.
func newTestCA() (*testCA, error) {
	p, leaf, err := testca.New("kusionpr test CA", 24*time.Hour)
	if err != nil {
		return nil, err
	}
	return &testCA{pem: p, leaf: leaf}, nil
}
