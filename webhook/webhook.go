// Package webhook receives GitHub webhook deliveries for the bot: it checks
// the HMAC signature before trusting anything in a request, bounds what an
// unauthenticated sender can make the server read, and remembers delivery
// ids so that a redelivered event is not acted on twice.
package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"
)

// MaxBody is GitHub's cap on a delivery's payload (25 MB); larger bodies are
// refused. GitHub never sends more, so anything bigger is not from GitHub.
const MaxBody = 25 << 20

const (
	signatureHeader = "X-Hub-Signature-256"
	signaturePrefix = "sha256="
)

// Delivery is one verified webhook request.
type Delivery struct {
	// ID is X-GitHub-Delivery: the same on every redelivery of one event.
	ID string
	// Event is X-GitHub-Event, such as "issue_comment" or "pull_request".
	Event string
	// HookID is X-GitHub-Hook-ID, empty when GitHub did not send it.
	HookID string
	// Body is the event's JSON: the request body, or the form's payload
	// field when the hook was set up with the form content type.
	Body []byte
}

// Error is why a request was refused, with the HTTP status to answer.
// Reason is safe to send back and to log: it never holds the secret, the
// signature received or the body.
type Error struct {
	Status int
	Reason string
	// RetryAfter, when set, is for a Retry-After header (with 503).
	RetryAfter time.Duration
}

func (e *Error) Error() string { return e.Reason }

func refuse(status int, format string, args ...any) *Error {
	return &Error{Status: status, Reason: fmt.Sprintf(format, args...)}
}

// Receive reads and verifies a delivery. Nothing of the request is looked
// at beyond its method, headers' shape and size and its signature until
// the signature holds, so a stranger learns nothing but what GitHub
// documents. The body is read only within budget (nil: no bound but
// MaxBody per request), charged chunk by chunk as it arrives, and hashed
// as it arrives. With w, the request's connection is given the body's
// deadline (the budget's pace: seconds for a GitHub-sized body), so a
// sender who stalls is cut off and its share freed; w may be nil (no
// deadline but the server's own). Errors are *Error: 405 (the caller
// should add "Allow: POST"), 401 for a missing or wrong signature, 408 for
// a body that did not arrive by its deadline, 413 for a body over MaxBody
// or the budget, 415 for a content type GitHub does not send, 503 (with
// RetryAfter) when the budget had no room in time, 400 for anything else
// malformed, a delivery id that is not GitHub's GUID among them.
func Receive(w http.ResponseWriter, r *http.Request, secret []byte, budget *Budget) (*Delivery, error) {
	if r.Method != http.MethodPost {
		return nil, refuse(http.StatusMethodNotAllowed, "webhooks are delivered with POST")
	}
	if len(secret) == 0 {
		// An empty key is one anyone can sign with: fail closed, as a
		// server error since the sender did nothing wrong.
		return nil, refuse(http.StatusInternalServerError, "the webhook secret is not set")
	}
	want, err := parseSignature(r.Header)
	if err != nil {
		return nil, err
	}
	d := &Delivery{
		ID:     r.Header.Get("X-GitHub-Delivery"),
		Event:  r.Header.Get("X-GitHub-Event"),
		HookID: r.Header.Get("X-GitHub-Hook-ID"),
	}
	// Headers are checked before any byte of the body is read: what
	// GitHub never sends costs nothing.
	if d.Event == "" {
		return nil, refuse(http.StatusBadRequest, "missing X-GitHub-Event header")
	}
	if d.ID == "" {
		return nil, refuse(http.StatusBadRequest, "missing X-GitHub-Delivery header")
	}
	if !isGUID(d.ID) {
		// The id is remembered to drop redeliveries: only GitHub's shape
		// is, so its size is known. The value is not repeated.
		return nil, refuse(http.StatusBadRequest, "X-GitHub-Delivery is not a GUID as GitHub sends")
	}
	limit := int64(MaxBody)
	if budget != nil {
		limit = min(limit, budget.largest())
	}
	if r.ContentLength > limit {
		return nil, refuse(http.StatusRequestEntityTooLarge, "the body is over %d bytes", limit)
	}
	if r.Body == nil {
		return nil, refuse(http.StatusBadRequest, "the request has no body")
	}
	sh := budget.share(r.ContentLength)
	defer sh.release()
	pushBack := bodyDeadline(w, budget, r.ContentLength)
	mac := hmac.New(sha256.New, []byte(secret))
	chunks, err := readChunks(io.TeeReader(r.Body, mac), int(limit), r.ContentLength, func(n int) error {
		waited, ok := sh.grow(r.Context(), int64(n))
		pushBack(waited)
		if !ok {
			return &Error{Status: http.StatusServiceUnavailable, RetryAfter: budget.wait,
				Reason: "too many webhook bodies are being received at once: retry later"}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if !hmac.Equal(mac.Sum(nil), want) {
		return nil, refuse(http.StatusUnauthorized, "%s does not match the body: check the webhook secret", signatureHeader)
	}
	if d.Body, err = payload(r.Header.Get("Content-Type"), join(chunks)); err != nil {
		return nil, err
	}
	return d, nil
}

// bodyDeadline gives the connection w answers on the deadline of a body
// announcing the given length, and returns what pushes it back by each time
// the body waited for room in the budget: a sender is held to the pace of
// its own bytes, not to the bot's waits. Without w, or a connection that
// takes no deadline (a test's recorder), it does nothing.
func bodyDeadline(w http.ResponseWriter, budget *Budget, announced int64) (pushBack func(waited time.Duration)) {
	if w == nil || budget == nil {
		return func(time.Duration) {}
	}
	rc := http.NewResponseController(w)
	deadline := time.Now().Add(budget.pace.bodyTime(announced))
	if rc.SetReadDeadline(deadline) != nil {
		return func(time.Duration) {}
	}
	return func(d time.Duration) {
		if d > 0 {
			deadline = deadline.Add(d)
			_ = rc.SetReadDeadline(deadline)
		}
	}
}

// isGUID reports whether id has the shape of X-GitHub-Delivery:
// 72d3162e-cc78-11e3-81ab-4c9367dc0958.
func isGUID(id string) bool {
	if len(id) != 36 {
		return false
	}
	for i := range len(id) {
		c := id[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
				return false
			}
		}
	}
	return true
}

// parseSignature returns the MAC the sender claims. SHA-1 (X-Hub-Signature)
// is not accepted on its own: GitHub always sends SHA-256 alongside it.
func parseSignature(h http.Header) ([]byte, error) {
	v := h.Get(signatureHeader)
	if v == "" {
		if h.Get("X-Hub-Signature") != "" {
			return nil, refuse(http.StatusUnauthorized, "missing %s header (SHA-1 signatures are not accepted)", signatureHeader)
		}
		return nil, refuse(http.StatusUnauthorized, "missing %s header: set a secret on the webhook", signatureHeader)
	}
	hexMAC, ok := strings.CutPrefix(v, signaturePrefix)
	mac, err := hex.DecodeString(hexMAC)
	if !ok || err != nil || len(mac) != sha256.Size {
		return nil, refuse(http.StatusUnauthorized, "%s is not %s followed by %d hex digits", signatureHeader, signaturePrefix, 2*sha256.Size)
	}
	return mac, nil
}

// readChunks reads all of r if it holds at most limit bytes (and no more
// than announced, when it is not -1: net/http hands over no more). Before
// each chunk is made, take is asked for its bytes, and its error ends the
// read. Chunks grow with what actually arrives, from 4 KiB to 64 KiB, and
// never past what was announced, so a sender who announces a big body and
// sends little costs little, and what the body holds is never more than
// it sent and one chunk besides. It stops at limit+1 bytes without joining
// them, so an oversize body costs about limit bytes at most, and a body
// whose signature fails is never copied.
func readChunks(r io.Reader, limit int, announced int64, take func(n int) error) ([][]byte, error) {
	var chunks [][]byte
	total, size := 0, firstChunk
	for {
		want := limit + 1 - total
		if announced >= 0 {
			if int64(total) == announced {
				return chunks, nil
			}
			want = min(want, int(announced)-total)
		}
		size = min(size, want)
		// The byte past the limit, read only to tell the body is too
		// big, is not charged: the budget holds bodies up to the limit.
		if charge := min(size, limit-total); charge > 0 {
			if err := take(charge); err != nil {
				return nil, err
			}
		}
		buf := make([]byte, size)
		n, err := io.ReadFull(r, buf)
		chunks = append(chunks, buf[:n])
		total += n
		if total > limit {
			return nil, refuse(http.StatusRequestEntityTooLarge, "the body is over %d bytes", limit)
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return chunks, nil
		}
		if err != nil {
			// An outer http.MaxBytesReader with a lower limit says so the
			// same way ours does.
			if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
				return nil, refuse(http.StatusRequestEntityTooLarge, "the body is too large")
			}
			if errors.Is(err, os.ErrDeadlineExceeded) {
				return nil, refuse(http.StatusRequestTimeout, "the body did not arrive in time: a delivery is sent at once")
			}
			return nil, refuse(http.StatusBadRequest, "reading the body: %v", err)
		}
		size = min(2*size, maxChunk)
	}
}

// The chunks a body is read in: small at first, as GitHub's deliveries
// are, and never so big that one chunk costs much beyond what has come.
const (
	firstChunk = 4 << 10
	maxChunk   = 64 << 10
)

func join(chunks [][]byte) []byte {
	if len(chunks) == 1 {
		return chunks[0]
	}
	total := 0
	for _, c := range chunks {
		total += len(c)
	}
	body := make([]byte, 0, total)
	for _, c := range chunks {
		body = append(body, c...)
	}
	return body
}

// payload returns the event's JSON from a verified body. The signature
// covers the body as sent, so a form is decoded only after it is checked.
func payload(contentType string, body []byte) ([]byte, error) {
	media := "application/json"
	if contentType != "" {
		var err error
		if media, _, err = mime.ParseMediaType(contentType); err != nil {
			return nil, refuse(http.StatusBadRequest, "malformed Content-Type header")
		}
	}
	switch media {
	case "application/json":
	case "application/x-www-form-urlencoded":
		form, err := url.ParseQuery(string(body))
		if err != nil {
			return nil, refuse(http.StatusBadRequest, "the form body is malformed")
		}
		if !form.Has("payload") {
			return nil, refuse(http.StatusBadRequest, "the form body has no payload field")
		}
		body = []byte(form.Get("payload"))
	default:
		return nil, refuse(http.StatusUnsupportedMediaType, "content type %q is neither application/json nor application/x-www-form-urlencoded", media)
	}
	if !json.Valid(body) {
		return nil, refuse(http.StatusBadRequest, "the payload is not valid JSON")
	}
	return body, nil
}

// NewSecret checks the webhook secret the bot was configured with. The bot
// must not start without one, since every delivery would then be refused
// (or, worse, accepted unsigned). envName is where the value came from, so
// the error tells the operator what to set; the value is never repeated.
func NewSecret(value, envName string) ([]byte, error) {
	if value == "" {
		return nil, fmt.Errorf("%s is empty: set it to the GitHub App's webhook secret", envName)
	}
	if strings.TrimSpace(value) != value {
		// Almost always a newline from a file or a copy; GitHub would sign
		// with the secret as typed, and every delivery would fail with 401.
		return nil, fmt.Errorf("%s begins or ends with white space (a trailing newline?): remove it, or if it is part of the secret, choose another", envName)
	}
	return []byte(value), nil
}
