package webhook

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"
)

// FuzzReceive sends Receive whatever a stranger could: any method, headers
// and body, signed right (sign), or with any signature header at all. It
// must never panic, must answer every refusal with an *Error of a status it
// documents, and must never accept a body whose signature is not the
// secret's HMAC of exactly the bytes sent.
func FuzzReceive(f *testing.F) {
	const guid = "72d3162e-cc78-11e3-81ab-4c9367dc0958"
	body := `{"action":"created","comment":{"body":"/kusion apply"}}`
	f.Add("POST", true, "", guid, "issue_comment", "application/json", []byte(body), false)
	f.Add("POST", false, "", guid, "issue_comment", "application/json", []byte(body), false)
	f.Add("POST", false, sign(testSecret, body), guid, "issue_comment", "application/json", []byte(body), true)
	f.Add("POST", false, sign("other", body), guid, "issue_comment", "", []byte(body), false)
	f.Add("POST", false, "sha256="+strings.Repeat("0", 64), guid, "ping", "application/json", []byte("{}"), false)
	f.Add("POST", true, "", guid, "ping", "application/x-www-form-urlencoded", []byte("payload="+url.QueryEscape(body)), false)
	f.Add("POST", true, "", "not-a-guid", "ping", "application/json", []byte("{}"), false)
	f.Add("POST", true, "", guid, "", "text/plain", []byte("{}"), true)
	f.Add("GET", true, "", guid, "ping", "application/json", []byte(""), false)
	f.Add("POST", false, "sha1=00", guid, "ping", "application/json; charset", []byte("{"), false)

	allowed := map[int]bool{400: true, 401: true, 405: true, 408: true, 413: true, 415: true, 500: true, 503: true}
	budget := NewBudget(1<<20, time.Millisecond)
	f.Fuzz(func(t *testing.T, method string, signRight bool, sig, id, event, contentType string, raw []byte, chunked bool) {
		if !validMethod(method) {
			return // httptest.NewRequest panics on what net/http would never hand a handler
		}
		if signRight {
			sig = sign(testSecret, string(raw))
		}
		r := httptest.NewRequest(method, "/webhook", bytes.NewReader(raw))
		if chunked {
			r.ContentLength = -1
			r.Body = io.NopCloser(bytes.NewReader(raw))
		}
		for k, v := range map[string]string{"X-Hub-Signature-256": sig, "X-GitHub-Delivery": id, "X-GitHub-Event": event, "Content-Type": contentType} {
			if v != "" {
				r.Header[k] = []string{v}
			}
		}
		d, err := Receive(nil, r, []byte(testSecret), budget)
		if err != nil {
			e, ok := errors.AsType[*Error](err)
			if !ok || !allowed[e.Status] || e.Reason == "" {
				t.Fatalf("refusal %#v is not an *Error with a documented status", err)
			}
			if strings.Contains(e.Reason, testSecret) {
				t.Fatalf("refusal %q holds the secret", e.Reason)
			}
			return
		}
		mac := hmac.New(sha256.New, []byte(testSecret))
		mac.Write(raw)
		got := r.Header.Get("X-Hub-Signature-256")
		hexMAC, _ := strings.CutPrefix(got, "sha256=")
		if claimed, err := hex.DecodeString(hexMAC); err != nil || !hmac.Equal(claimed, mac.Sum(nil)) {
			t.Fatalf("accepted a body whose signature %q is not the secret's", got)
		}
		if method != http.MethodPost || d.ID != id || !isGUID(d.ID) || d.Event == "" || len(d.Body) == 0 {
			t.Fatalf("accepted %+v from a %s with delivery id %q", d, method, id)
		}
		if budget.InUse() != 0 {
			t.Fatalf("%d bytes of the budget held after Receive returned", budget.InUse())
		}
	})
}

func validMethod(m string) bool {
	if m == "" {
		return false
	}
	for _, c := range m {
		if !strings.ContainsRune("!#$%&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz", c) {
			return false
		}
	}
	return true
}
