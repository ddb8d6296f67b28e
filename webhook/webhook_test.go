package webhook

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"strings"
	"testing"
)

const testSecret = "It's a Secret to Everybody"

func sign(secret, body string) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(body))
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

func TestReceive(t *testing.T) {
	const body = `{"action":"created","comment":{"body":"/kusion apply"}}`
	form := "payload=" + url.QueryEscape(body)
	good := sign(testSecret, body)

	type request struct {
		method  string
		body    string
		headers map[string]string
	}
	// base is a delivery as GitHub sends it; each case changes it.
	base := func(change func(*request)) request {
		r := request{method: http.MethodPost, body: body, headers: map[string]string{
			"Content-Type":        "application/json",
			"X-GitHub-Event":      "issue_comment",
			"X-GitHub-Delivery":   "72d3162e-cc78-11e3-81ab-4c9367dc0958",
			"X-GitHub-Hook-ID":    "292430182",
			"X-Hub-Signature-256": good,
		}}
		if change != nil {
			change(&r)
		}
		return r
	}
	tests := []struct {
		name     string
		req      request
		noSecret bool
		status   int    // 0: accepted
		wantBody string // when accepted
	}{
		{name: "good signature", req: base(nil), wantBody: body},
		{name: "content type with charset", req: base(func(r *request) {
			r.headers["Content-Type"] = "application/json; charset=utf-8"
		}), wantBody: body},
		{name: "no content type is read as JSON", req: base(func(r *request) {
			delete(r.headers, "Content-Type")
		}), wantBody: body},
		{name: "no hook id", req: base(func(r *request) {
			delete(r.headers, "X-GitHub-Hook-ID")
		}), wantBody: body},
		{name: "form-encoded payload", req: base(func(r *request) {
			r.body = form
			r.headers["Content-Type"] = "application/x-www-form-urlencoded"
			r.headers["X-Hub-Signature-256"] = sign(testSecret, form)
		}), wantBody: body},
		{name: "wrong secret", req: base(func(r *request) {
			r.headers["X-Hub-Signature-256"] = sign("another secret", body)
		}), status: 401},
		{name: "body changed after signing", req: base(func(r *request) {
			r.body = strings.Replace(body, "apply", "unlock", 1)
		}), status: 401},
		{name: "form signed as its decoded payload", req: base(func(r *request) {
			r.body = form
			r.headers["Content-Type"] = "application/x-www-form-urlencoded"
		}), status: 401},
		{name: "missing signature", req: base(func(r *request) {
			delete(r.headers, "X-Hub-Signature-256")
		}), status: 401},
		{name: "sha1 header only", req: base(func(r *request) {
			delete(r.headers, "X-Hub-Signature-256")
			mac := hmac.New(sha1.New, []byte(testSecret))
			mac.Write([]byte(body))
			r.headers["X-Hub-Signature"] = "sha1=" + hex.EncodeToString(mac.Sum(nil))
		}), status: 401},
		{name: "sha1= in the sha256 header", req: base(func(r *request) {
			r.headers["X-Hub-Signature-256"] = "sha1=" + strings.TrimPrefix(good, "sha256=")
		}), status: 401},
		{name: "no prefix", req: base(func(r *request) {
			r.headers["X-Hub-Signature-256"] = strings.TrimPrefix(good, "sha256=")
		}), status: 401},
		{name: "malformed hex", req: base(func(r *request) {
			r.headers["X-Hub-Signature-256"] = "sha256=" + strings.Repeat("zz", 32)
		}), status: 401},
		{name: "short signature", req: base(func(r *request) {
			r.headers["X-Hub-Signature-256"] = good[:len(good)-2]
		}), status: 401},
		{name: "empty secret refuses everything", noSecret: true, req: base(func(r *request) {
			r.headers["X-Hub-Signature-256"] = sign("", body)
		}), status: 500},
		{name: "missing event", req: base(func(r *request) {
			delete(r.headers, "X-GitHub-Event")
		}), status: 400},
		{name: "missing delivery id", req: base(func(r *request) {
			delete(r.headers, "X-GitHub-Delivery")
		}), status: 400},
		{name: "delivery id in capitals", req: base(func(r *request) {
			r.headers["X-GitHub-Delivery"] = "72D3162E-CC78-11E3-81AB-4C9367DC0958"
		}), wantBody: body},
		{name: "delivery id not a GUID", req: base(func(r *request) {
			r.headers["X-GitHub-Delivery"] = "1"
		}), status: 400},
		{name: "delivery id of 900 KB", req: base(func(r *request) {
			r.headers["X-GitHub-Delivery"] = strings.Repeat("72d3162e-cc78-11e3-81ab-4c9367dc0958", 25000)
		}), status: 400},
		{name: "delivery id with a GUID inside", req: base(func(r *request) {
			r.headers["X-GitHub-Delivery"] = "x72d3162e-cc78-11e3-81ab-4c9367dc0958"
		}), status: 400},
		{name: "delivery id with dashes misplaced", req: base(func(r *request) {
			r.headers["X-GitHub-Delivery"] = "72d3162ec-c78-11e3-81ab-4c9367dc0958"
		}), status: 400},
		{name: "delivery id not hex", req: base(func(r *request) {
			r.headers["X-GitHub-Delivery"] = "72d3162g-cc78-11e3-81ab-4c9367dc0958"
		}), status: 400},
		{name: "invalid JSON", req: base(func(r *request) {
			r.body = `{"action":`
			r.headers["X-Hub-Signature-256"] = sign(testSecret, r.body)
		}), status: 400},
		{name: "empty body", req: base(func(r *request) {
			r.body = ""
			r.headers["X-Hub-Signature-256"] = sign(testSecret, "")
		}), status: 400},
		{name: "form without payload", req: base(func(r *request) {
			r.body = "other=1"
			r.headers["Content-Type"] = "application/x-www-form-urlencoded"
			r.headers["X-Hub-Signature-256"] = sign(testSecret, r.body)
		}), status: 400},
		{name: "form payload not JSON", req: base(func(r *request) {
			r.body = "payload=hello"
			r.headers["Content-Type"] = "application/x-www-form-urlencoded"
			r.headers["X-Hub-Signature-256"] = sign(testSecret, r.body)
		}), status: 400},
		{name: "malformed form", req: base(func(r *request) {
			r.body = "payload=%zz"
			r.headers["Content-Type"] = "application/x-www-form-urlencoded"
			r.headers["X-Hub-Signature-256"] = sign(testSecret, r.body)
		}), status: 400},
		{name: "malformed content type", req: base(func(r *request) {
			r.headers["Content-Type"] = "application/json; charset"
		}), status: 400},
		{name: "other content type", req: base(func(r *request) {
			r.headers["Content-Type"] = "text/plain"
		}), status: 415},
		{name: "GET", req: base(func(r *request) {
			r.method = http.MethodGet
			r.body = ""
		}), status: 405},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			secret := testSecret
			if tt.noSecret {
				secret = ""
			}
			r := httptest.NewRequest(tt.req.method, "/webhook", strings.NewReader(tt.req.body))
			for k, v := range tt.req.headers {
				r.Header.Set(k, v)
			}
			d, err := Receive(nil, r, []byte(secret), nil)
			if tt.status == 0 {
				if err != nil {
					t.Fatalf("Receive: %v", err)
				}
				want := Delivery{
					ID:     tt.req.headers["X-GitHub-Delivery"],
					Event:  tt.req.headers["X-GitHub-Event"],
					HookID: tt.req.headers["X-GitHub-Hook-ID"],
					Body:   []byte(tt.wantBody),
				}
				if d.ID != want.ID || d.Event != want.Event || d.HookID != want.HookID || !bytes.Equal(d.Body, want.Body) {
					t.Fatalf("Receive = %+v, want %+v", d, want)
				}
				return
			}
			e, ok := errors.AsType[*Error](err)
			if !ok {
				t.Fatalf("Receive = %v, %v; want *Error with status %d", d, err, tt.status)
			}
			if e.Status != tt.status {
				t.Errorf("status = %d (%s), want %d", e.Status, e.Reason, tt.status)
			}
			if e.Reason == "" || e.Error() != e.Reason {
				t.Errorf("Error() = %q, Reason = %q", e.Error(), e.Reason)
			}
			if strings.Contains(e.Reason, testSecret) {
				t.Errorf("reason %q holds the secret", e.Reason)
			}
			for _, h := range []string{"X-Hub-Signature-256", "X-Hub-Signature"} {
				if sig := tt.req.headers[h]; len(sig) > 8 && strings.Contains(e.Reason, sig[7:]) {
					t.Errorf("reason %q holds the signature received", e.Reason)
				}
			}
		})
	}
}

// zeros is an endless body that costs nothing to send, counting what is read.
type zeros struct{ read int64 }

func (z *zeros) Read(p []byte) (int, error) {
	clear(p)
	z.read += int64(len(p))
	return len(p), nil
}

func TestReceiveOversize(t *testing.T) {
	tests := []struct {
		name          string
		contentLength int64 // -1: chunked, unknown until read
		maxRead       int64
	}{
		// GitHub sends Content-Length: refused before reading anything.
		{name: "announced", contentLength: MaxBody + 1, maxRead: 0},
		{name: "chunked", contentLength: -1, maxRead: MaxBody + 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := &zeros{}
			r := httptest.NewRequest(http.MethodPost, "/webhook", io.NopCloser(body))
			r.ContentLength = tt.contentLength
			r.Header.Set("Content-Type", "application/json")
			r.Header.Set("X-GitHub-Event", "push")
			r.Header.Set("X-GitHub-Delivery", "72d3162e-cc78-11e3-81ab-4c9367dc0958")
			r.Header.Set("X-Hub-Signature-256", sign(testSecret, ""))

			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, err := Receive(nil, r, []byte(testSecret), nil)
			runtime.ReadMemStats(&after)

			if e, ok := errors.AsType[*Error](err); !ok || e.Status != http.StatusRequestEntityTooLarge {
				t.Fatalf("Receive: %v, want 413", err)
			}
			if body.read > tt.maxRead {
				t.Errorf("read %d bytes, want at most %d", body.read, tt.maxRead)
			}
			alloc := after.TotalAlloc - before.TotalAlloc
			t.Logf("read %d bytes, allocated %d", body.read, alloc)
			if alloc > uint64(tt.maxRead)+1<<20 {
				t.Errorf("allocated %d bytes for a %d-byte cap", alloc, MaxBody)
			}
		})
	}
}

func TestReadChunks(t *testing.T) {
	const limit = 10 << 10 // crosses chunk boundaries (4 KiB, then 8 KiB)
	tests := []struct {
		size    int
		tooLong bool
	}{
		{size: 0}, {size: 1}, {size: 4 << 10}, {size: 4<<10 + 1}, {size: limit - 1}, {size: limit},
		{size: limit + 1, tooLong: true}, {size: 3 * limit, tooLong: true},
	}
	for _, tt := range tests {
		in := bytes.Repeat([]byte("0123456789abcdef"), tt.size/16+1)[:tt.size]
		// Unannounced, and announced as net/http hands over a body of a
		// Content-Length: no more than that.
		for _, announced := range []int64{-1, int64(tt.size)} {
			if announced > limit {
				continue // refused before reading
			}
			var taken int
			chunks, err := readChunks(io.LimitReader(bytes.NewReader(in), max(announced, int64(tt.size))), limit, announced, func(n int) error {
				taken += n
				return nil
			})
			got := join(chunks)
			if tt.tooLong {
				if e, ok := errors.AsType[*Error](err); !ok || e.Status != http.StatusRequestEntityTooLarge {
					t.Errorf("size %d: err = %v, want 413", tt.size, err)
				}
				continue
			}
			if err != nil || !bytes.Equal(got, in) {
				t.Errorf("size %d, announced %d: got %d bytes, %v; want the %d bytes back", tt.size, announced, len(got), err, len(in))
			}
			if taken < len(in) || (announced >= 0 && taken != len(in)) {
				t.Errorf("size %d, announced %d: took %d bytes of the budget, want at least the body, and exactly it when announced", tt.size, announced, taken)
			}
		}
	}
}

func TestReadLimitedOuterMaxBytesReader(t *testing.T) {
	body := http.MaxBytesReader(nil, io.NopCloser(&zeros{}), 100)
	_, err := readChunks(body, MaxBody, -1, func(int) error { return nil })
	if e, ok := errors.AsType[*Error](err); !ok || e.Status != http.StatusRequestEntityTooLarge {
		t.Fatalf("err = %v, want 413", err)
	}
}

func TestNewSecret(t *testing.T) {
	const env = "KUSIONPR_WEBHOOK_SECRET"
	tests := []struct {
		value string
		ok    bool
	}{
		{value: "", ok: false},
		{value: "s3cr3t-value\n", ok: false},
		{value: "  s3cr3t-value", ok: false},
		{value: " \t", ok: false},
		{value: "s3cr3t value", ok: true},
	}
	for _, tt := range tests {
		got, err := NewSecret(tt.value, env)
		if tt.ok {
			if err != nil || string(got) != tt.value {
				t.Errorf("NewSecret(%q) = %q, %v", tt.value, got, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("NewSecret(%q) accepted it", tt.value)
			continue
		}
		if !strings.Contains(err.Error(), env) {
			t.Errorf("NewSecret(%q): %v does not name %s", tt.value, err, env)
		}
		if v := strings.TrimSpace(tt.value); v != "" && strings.Contains(err.Error(), v) {
			t.Errorf("NewSecret(%q): %v repeats the value", tt.value, err)
		}
	}
}
