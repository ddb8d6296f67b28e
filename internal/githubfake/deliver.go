package githubfake

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// Delivered is the receiver's answer to a delivery.
type Delivered struct {
	Status int
	Body   string
	// Err is why no answer came (Status 0): the receiver was not
	// listening, or took longer than GitHub waits. Only Server.Deliver
	// reports it; Deliver fails the test.
	Err error
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

// hookRequest is a delivery as GitHub sends it: what it sends again, with
// the same delivery id and body, when asked to redeliver it.
type hookRequest struct {
	event, id string
	body      []byte
	secret    string
	unsigned  bool
}

// newHookRequest is the delivery of payload as event, signed with secret
// and changed by opts, with a fresh delivery id.
func newHookRequest(t testing.TB, secret, event string, payload map[string]any, opts []DeliverOption) *hookRequest {
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
	return &hookRequest{event: event, id: d.id, body: body, secret: d.secret, unsigned: d.unsigned}
}

// post sends the delivery to url as GitHub's hookshot does: JSON, signed
// in X-Hub-Signature-256 (and the older X-Hub-Signature), with GitHub's
// headers, giving up after GitHub's ten seconds.
func (h *hookRequest) post(url string) (Delivered, error) {
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(h.body))
	if err != nil {
		return Delivered{}, err
	}
	hd := req.Header
	hd.Set("Content-Type", "application/json")
	hd.Set("User-Agent", "GitHub-Hookshot/5a3e1c9")
	hd.Set("X-GitHub-Event", h.event)
	hd.Set("X-GitHub-Delivery", h.id)
	hd.Set("X-GitHub-Hook-ID", "292430182")
	hd.Set("X-GitHub-Hook-Installation-Target-Type", "integration")
	hd.Set("X-GitHub-Hook-Installation-Target-ID", "79929171")
	if !h.unsigned {
		m256 := hmac.New(sha256.New, []byte(h.secret))
		m256.Write(h.body)
		hd.Set("X-Hub-Signature-256", "sha256="+hex.EncodeToString(m256.Sum(nil)))
		m1 := hmac.New(sha1.New, []byte(h.secret))
		m1.Write(h.body)
		hd.Set("X-Hub-Signature", "sha1="+hex.EncodeToString(m1.Sum(nil)))
	}
	c := &http.Client{Timeout: 10 * time.Second}
	resp, err := c.Do(req)
	if err != nil {
		return Delivered{}, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return Delivered{Status: resp.StatusCode, Body: string(b)}, nil
}

// Deliver posts payload to url as GitHub delivers event to an App's
// webhook: JSON, signed with secret in X-Hub-Signature-256 (and the older
// X-Hub-Signature), with GitHub's headers and a fresh delivery id. The
// delivery is in no fake's delivery log: Server.Deliver makes one that is.
func Deliver(t testing.TB, url, secret, event string, payload map[string]any, opts ...DeliverOption) Delivered {
	t.Helper()
	d, err := newHookRequest(t, secret, event, payload, opts).post(url)
	if err != nil {
		t.Fatalf("deliver %s: %v", event, err)
	}
	return d
}

// failure is how GitHub's delivery log words an attempt that got no answer.
func failure(err error) string {
	if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() {
		return "timed out"
	}
	return "failed to connect to host"
}

// newGUID makes a delivery id shaped like GitHub's.
func newGUID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	b[6] = b[6]&0x0f | 0x10 // GitHub's ids are time-based (version 1) GUIDs
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}
