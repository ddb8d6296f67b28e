package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"sort"
	"strings"

	"k8s.io/client-go/tools/clientcmd"
)

// minSecret is the shortest value redacted: shorter ones would blank
// ordinary words of a comment, and no credential is that short.
const minSecret = 6

// redactor keeps the action's credentials out of everything it publishes.
// The runner masks registered values in the job's log only; comments,
// check runs and the job summary go out through the API and files, so the
// action replaces the values itself wherever it writes. A preview shows
// what a spec makes of files and values (a Terraform function reading the
// kubeconfig, a provider's error quoting its credentials): whatever the
// path, the value does not leave the action.
type redactor struct {
	secrets []string // longest first, so that one holding another goes whole
}

func newRedactor(values ...string) *redactor {
	seen := map[string]bool{}
	r := &redactor{}
	for _, v := range values {
		if v = strings.TrimSpace(v); len(v) >= minSecret && !seen[v] {
			seen[v] = true
			r.secrets = append(r.secrets, v)
		}
	}
	sort.SliceStable(r.secrets, func(i, j int) bool { return len(r.secrets[i]) > len(r.secrets[j]) })
	return r
}

// String is s with every secret replaced by ***, also in the form JSON
// strings give it.
func (r *redactor) String(s string) string {
	for _, v := range r.secrets {
		s = strings.ReplaceAll(s, v, "***")
		if q := jsonForm(v); q != v {
			s = strings.ReplaceAll(s, q, "***")
		}
	}
	return s
}

func jsonForm(v string) string {
	b, _ := json.Marshal(v)
	return string(b[1 : len(b)-1])
}

// Writer redacts what is written to w. The runner's ::add-mask:: commands
// pass as they are: they are how the runner learns what to mask, and it
// never shows them.
func (r *redactor) Writer(w io.Writer) io.Writer { return redactingWriter{r: r, w: w} }

type redactingWriter struct {
	r *redactor
	w io.Writer
}

func (rw redactingWriter) Write(p []byte) (int, error) {
	if bytes.HasPrefix(p, []byte("::add-mask::")) {
		return rw.w.Write(p)
	}
	if _, err := io.WriteString(rw.w, rw.r.String(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Transport redacts the bodies of requests to GitHub: comments, check
// runs, replies.
func (r *redactor) Transport(next http.RoundTripper) http.RoundTripper {
	return redactingTransport{r: r, next: next}
}

type redactingTransport struct {
	r    *redactor
	next http.RoundTripper
}

func (t redactingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body == nil || req.Body == http.NoBody || len(t.r.secrets) == 0 {
		return t.next.RoundTrip(req)
	}
	b, err := io.ReadAll(req.Body)
	req.Body.Close()
	if err != nil {
		return nil, err
	}
	out := []byte(t.r.String(string(b)))
	clone := req.Clone(req.Context())
	clone.Body = io.NopCloser(bytes.NewReader(out))
	clone.ContentLength = int64(len(out))
	clone.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(out)), nil }
	return t.next.RoundTrip(clone)
}

// kubeconfigSecrets are the credentials a kubeconfig holds, as written in
// it: tokens, passwords, client keys, an auth provider's tokens and
// secrets, an exec plugin's environment. A kubeconfig that does not parse
// gives the values of its lines that name a token, password or key data.
func kubeconfigSecrets(content string) []string {
	if strings.TrimSpace(content) == "" {
		return nil
	}
	var out []string
	cfg, err := clientcmd.Load([]byte(content))
	if err == nil {
		for _, a := range cfg.AuthInfos {
			out = append(out, a.Token, a.Password)
			if len(a.ClientKeyData) > 0 {
				out = append(out, base64.StdEncoding.EncodeToString(a.ClientKeyData), string(a.ClientKeyData))
			}
			if a.AuthProvider != nil {
				for k, v := range a.AuthProvider.Config {
					if strings.Contains(k, "token") || strings.Contains(k, "secret") {
						out = append(out, v)
					}
				}
			}
			if a.Exec != nil {
				for _, e := range a.Exec.Env {
					out = append(out, e.Value)
				}
			}
		}
	}
	// The values as the file writes them (quoted or not), whatever parsed.
	for _, line := range strings.Split(content, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok {
			continue
		}
		k = strings.Trim(strings.TrimSpace(k), `"'`)
		if k == "token" || k == "password" || strings.HasSuffix(k, "key-data") || strings.HasSuffix(k, "-token") || strings.HasSuffix(k, "secret") {
			out = append(out, strings.Trim(strings.TrimSuffix(strings.TrimSpace(v), ","), `"'`))
		}
	}
	return out
}
