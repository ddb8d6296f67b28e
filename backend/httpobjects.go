package backend

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"
)

// httpObjects keeps the store's objects behind a team's own HTTP service,
// which speaks a small protocol (docs/stores.md):
//
//	HEAD KEY                     200: it exists, 404: it does not
//	GET  KEY                     200 and the object, 404
//	PUT  KEY  If-None-Match: *   201 created, 412: it exists (create-only)
//	PUT  KEY                     200, 201 or 204: written whole
//	GET  PREFIX/?list            200 and {"names": [...]}, the objects directly under it
//
// KEY is the store's key under the URL's path, each segment escaped. The
// operator's KUSIONPR_STORE_AUTHORIZATION, if set, is sent as the
// Authorization header of every request, and only to the store's host:
// a redirect elsewhere is refused.
type httpObjects struct {
	base   *url.URL
	client *http.Client
	auth   string
}

// StoreAuthorizationVar names the Authorization header's value for an
// HTTP store.
const StoreAuthorizationVar = "KUSIONPR_STORE_AUTHORIZATION"

func openHTTP(ctx context.Context, u *url.URL) (*Store, error) {
	where := location(u)
	if u.Scheme == "http" && !loopback(u.Hostname()) {
		return nil, fmt.Errorf("open backend %s: plain http is for a store on this machine only: use https", where)
	}
	q := u.Query()
	prefix, err := cleanPrefix(q.Get("prefix"))
	if err != nil {
		return nil, fmt.Errorf("open backend %s: %w", where, err)
	}
	base := *u
	base.RawQuery, base.User = "", nil
	if !strings.HasSuffix(base.Path, "/") {
		base.Path += "/"
	}
	client := &http.Client{Timeout: time.Minute, CheckRedirect: sameOrigin(u)}
	o := httpObjects{base: &base, client: client, auth: os.Getenv(StoreAuthorizationVar)}
	return &Store{obj: o, prefix: prefix}, nil
}

// sameOrigin is the HTTP store's redirect policy: the Authorization header
// goes with every request, so a redirect is followed only to the store's
// own scheme and host (Go's client would carry the header to a subdomain,
// and over plain http after an https redirect), five at most.
func sameOrigin(store *url.URL) func(*http.Request, []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		if req.URL.Host != store.Host || req.URL.Scheme != store.Scheme {
			return fmt.Errorf("the store redirected to %s://%s, not %s://%s: not followed", req.URL.Scheme, req.URL.Host, store.Scheme, store.Host)
		}
		if len(via) >= 5 {
			return errors.New("the store redirected more than 5 times")
		}
		return nil
	}
}

func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func (o httpObjects) url(key string) string {
	segs := strings.Split(key, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	u := *o.base
	u.Path = o.base.Path + strings.Join(segs, "/")
	u.RawPath = o.base.EscapedPath() + strings.Join(segs, "/")
	return u.String()
}

func (o httpObjects) do(ctx context.Context, method, key string, body []byte, header http.Header) (*http.Response, error) {
	target := o.url(key)
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, target, rd)
	if err != nil {
		return nil, err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	if o.auth != "" {
		req.Header.Set("Authorization", o.auth)
	}
	resp, err := o.client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			// The URL is the store's: its key, not a secret.
			return nil, fmt.Errorf("%s %s: %w", method, key, ue.Err)
		}
		return nil, err
	}
	return resp, nil
}

// statusError is a refusal of the store, with a little of what it said.
func (o httpObjects) statusError(method, key string, resp *http.Response) error {
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	text := strings.TrimSpace(string(msg))
	if o.auth != "" {
		// A service that quotes the request back must not put the
		// credential in an error, which may reach a log or a comment.
		text = strings.ReplaceAll(text, o.auth, "[redacted]")
		if _, token, ok := strings.Cut(o.auth, " "); ok && len(token) >= 8 {
			text = strings.ReplaceAll(text, token, "[redacted]")
		}
	}
	err := fmt.Errorf("%s %s: %s: %s", method, key, resp.Status, text)
	if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
		return fmt.Errorf("%w (check %s)", err, StoreAuthorizationVar)
	}
	return err
}

func (o httpObjects) exists(ctx context.Context, key string) (bool, error) {
	resp, err := o.do(ctx, http.MethodHead, key, nil, nil)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
		return true, nil
	case http.StatusNotFound:
		return false, nil
	}
	return false, o.statusError("HEAD", key, resp)
}

func (o httpObjects) read(ctx context.Context, key string, limit int64) ([]byte, error) {
	resp, err := o.do(ctx, http.MethodGet, key, nil, nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return nil, fmt.Errorf("%w: %s", errObjectMissing, key)
	case resp.StatusCode != http.StatusOK:
		return nil, o.statusError("GET", key, resp)
	case resp.ContentLength > limit:
		return nil, fmt.Errorf("%w: %d bytes, more than %d", errObjectTooLarge, resp.ContentLength, limit)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", key, err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%w: more than %d bytes", errObjectTooLarge, limit)
	}
	return data, nil
}

// maxListing bounds a listing's answer: 64 MB of names.
const maxListing = 64 << 20

func (o httpObjects) list(ctx context.Context, prefix string) ([]string, error) {
	u := o.url(prefix) + "?list"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	if o.auth != "" {
		req.Header.Set("Authorization", o.auth)
	}
	resp, err := o.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", prefix, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		return nil, nil
	}
	if resp.StatusCode != http.StatusOK {
		return nil, o.statusError("LIST", prefix, resp)
	}
	var out struct {
		Names []string `json:"names"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxListing)).Decode(&out); err != nil {
		return nil, fmt.Errorf("list %s: the store's answer is not {\"names\": [...]}: %w", prefix, err)
	}
	for _, n := range out.Names {
		if n == "" || strings.Contains(n, "/") {
			return nil, fmt.Errorf("list %s: the store named %q, which is not directly under it", prefix, n)
		}
	}
	return out.Names, nil
}

func (o httpObjects) write(ctx context.Context, key string, data []byte, createOnly bool) error {
	h := http.Header{"Content-Type": {"application/yaml"}}
	if createOnly {
		h.Set("If-None-Match", "*")
	}
	resp, err := o.do(ctx, http.MethodPut, key, data, h)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	switch {
	case createOnly && resp.StatusCode == http.StatusPreconditionFailed:
		return fmt.Errorf("%w: %s", errObjectExists, key)
	case resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusCreated || resp.StatusCode == http.StatusNoContent:
		return nil
	}
	return o.statusError("PUT", key, resp)
}

func (o httpObjects) close() error { return nil }
