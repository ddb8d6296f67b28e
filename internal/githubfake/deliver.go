package githubfake

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"
)

// Delivered is the receiver's answer to a delivery.
type Delivered struct {
	Status int
	Body   string
}

type delivery struct {
	secret   string
	unsigned bool
	raw      []byte
	id       string
}

// DeliverOption changes a delivery, to send what GitHub would not.
type DeliverOption func(*delivery)

// WithoutSignature sends no X-Hub-Signature-256 (nor the older SHA-1 one).
func WithoutSignature() DeliverOption { return func(d *delivery) { d.unsigned = true } }

// WithSecret signs with another secret than the receiver's.
func WithSecret(secret string) DeliverOption { return func(d *delivery) { d.secret = secret } }

// WithRawBody sends body as it is, signed, instead of the payload.
func WithRawBody(body []byte) DeliverOption { return func(d *delivery) { d.raw = body } }

// WithDeliveryID sets X-GitHub-Delivery, the same on GitHub's redeliveries.
func WithDeliveryID(id string) DeliverOption { return func(d *delivery) { d.id = id } }

// Deliver posts payload to url as GitHub delivers event to an App's
// webhook: JSON, signed with secret in X-Hub-Signature-256 (and the older
// X-Hub-Signature), with GitHub's headers and a fresh delivery id.
func Deliver(t testing.TB, url, secret, event string, payload map[string]any, opts ...DeliverOption) Delivered {
	t.Helper()
	d := &delivery{secret: secret, id: newGUID()}
	for _, o := range opts {
		o(d)
	}
	body := d.raw
	if body == nil {
		var err error
		if body, err = json.Marshal(payload); err != nil {
			t.Fatal(err)
		}
	}
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	h := req.Header
	h.Set("Content-Type", "application/json")
	h.Set("User-Agent", "GitHub-Hookshot/5a3e1c9")
	h.Set("X-GitHub-Event", event)
	h.Set("X-GitHub-Delivery", d.id)
	h.Set("X-GitHub-Hook-ID", "292430182")
	h.Set("X-GitHub-Hook-Installation-Target-Type", "integration")
	h.Set("X-GitHub-Hook-Installation-Target-ID", "79929171")
	if !d.unsigned {
		m256 := hmac.New(sha256.New, []byte(d.secret))
		m256.Write(body)
		h.Set("X-Hub-Signature-256", "sha256="+hex.EncodeToString(m256.Sum(nil)))
		m1 := hmac.New(sha1.New, []byte(d.secret))
		m1.Write(body)
		h.Set("X-Hub-Signature", "sha1="+hex.EncodeToString(m1.Sum(nil)))
	}
	// GitHub gives up on a receiver after ten seconds.
	c := &http.Client{Timeout: 10 * time.Second}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("deliver %s: %v", event, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return Delivered{Status: resp.StatusCode, Body: string(b)}
}

// newGUID makes a delivery id shaped like GitHub's.
func newGUID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	b[6] = b[6]&0x0f | 0x10 // GitHub's ids are time-based (version 1) GUIDs
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}
