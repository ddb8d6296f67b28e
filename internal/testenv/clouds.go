package testenv

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"net/http"
	"os"
	"testing"
	"time"
)

// Clouds is the test environment's stand-in for the clouds' token services
// and the cluster's webhook token authenticator (internal/cloudfake).
type Clouds struct {
	// URL is https://127.0.0.1:PORT.
	URL string
	// CAPEM is the certificate authority its certificate is signed by.
	CAPEM []byte
	// Client trusts it.
	Client *http.Client
}

// CloudStandIn returns the running stand-in (hack/testenv.sh start).
func CloudStandIn(t testing.TB) Clouds {
	t.Helper()
	u, caFile := os.Getenv("KUSIONPR_TEST_CLOUD_URL"), os.Getenv("KUSIONPR_TEST_CLOUD_CA")
	if u == "" || caFile == "" {
		missing(t, "KUSIONPR_TEST_CLOUD_URL is not set: run `make test`, or `hack/testenv.sh start` and `eval \"$(hack/testenv.sh env)\"`")
	}
	ca, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatalf("the cloud stand-in's CA: %v", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		t.Fatalf("%s holds no certificate", caFile)
	}
	return Clouds{URL: u, CAPEM: ca, Client: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}}
}

// Accepted lists the tokens the cluster's authenticator has accepted.
func (c Clouds) Accepted(t testing.TB) []string {
	t.Helper()
	resp, err := c.Client.Get(c.URL + "/tokens")
	if err != nil {
		t.Fatalf("the cloud stand-in's tokens: %v", err)
	}
	defer resp.Body.Close()
	var out []string
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("the cloud stand-in's tokens: %v", err)
	}
	return out
}
