package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
)

const testKubeconfig = `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "https://127.0.0.1:6443", certificate-authority-data: Y2EtY2VydA==}
users:
- name: token-user
  user:
    token: "kube-token-0123456789"
- name: basic
  user: {username: admin, password: p4ssw0rd-secret}
- name: cert
  user:
    client-certificate-data: Y2VydA==
    client-key-data: ` + "LS0tLS1CRUdJTiBLRVktLS0tLQ==" + `
- name: oidc
  user:
    auth-provider:
      name: oidc
      config: {id-token: oidc-id-token-value, client-secret: oidc-client-secret, idp-issuer-url: "https://issuer"}
- name: plugin
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1
      command: get-token
      env: [{name: API_KEY, value: exec-env-api-key}]
      interactiveMode: Never
contexts:
- name: c
  context: {cluster: c, user: token-user}
current-context: c
`

func TestKubeconfigSecrets(t *testing.T) {
	got := kubeconfigSecrets(testKubeconfig)
	for _, want := range []string{
		"kube-token-0123456789", "p4ssw0rd-secret", "LS0tLS1CRUdJTiBLRVktLS0tLQ==", "-----BEGIN KEY-----",
		"oidc-id-token-value", "oidc-client-secret", "exec-env-api-key",
	} {
		if !slices.Contains(got, want) {
			t.Errorf("kubeconfigSecrets misses %q (got %q)", want, got)
		}
	}
	for _, public := range []string{"https://127.0.0.1:6443", "admin", "Y2VydA==", "https://issuer"} {
		if slices.Contains(got, public) {
			t.Errorf("kubeconfigSecrets counts %q, which is no secret", public)
		}
	}
	// A kubeconfig that does not parse still has its token found.
	broken := "users:\n- user:\n    token: broken-file-token-42\n  : [\n"
	if got := kubeconfigSecrets(broken); !slices.Contains(got, "broken-file-token-42") {
		t.Errorf("kubeconfigSecrets of a broken file = %q", got)
	}
}

func TestRedactor(t *testing.T) {
	r := newRedactor(append(kubeconfigSecrets(testKubeconfig), "ghs_token1234567890", "", "short")...)
	for _, s := range r.secrets {
		if len(s) < minSecret {
			t.Errorf("redactor keeps %q, shorter than %d", s, minSecret)
		}
	}
	in := "token kube-token-0123456789, key " + base64.StdEncoding.EncodeToString([]byte("-----BEGIN KEY-----")) + ", short stays"
	if got := r.String(in); strings.Contains(got, "kube-token") || strings.Contains(got, "LS0tLS1") || !strings.Contains(got, "short stays") {
		t.Errorf("String(%q) = %q", in, got)
	}

	// The log: redacted, but the runner's add-mask commands pass.
	var log bytes.Buffer
	w := r.Writer(&log)
	io.WriteString(w, "::add-mask::kube-token-0123456789\n")
	io.WriteString(w, "level=ERROR msg=\"unauthorized with kube-token-0123456789\"\n")
	if got := log.String(); strings.Count(got, "kube-token-0123456789") != 1 || !strings.HasPrefix(got, "::add-mask::kube-token-0123456789\n") {
		t.Errorf("log:\n%s", got)
	}

	// What goes to GitHub, in the JSON form the body takes.
	var seen []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		seen, _ = io.ReadAll(req.Body)
		if req.ContentLength != int64(len(seen)) {
			t.Errorf("Content-Length %d for a body of %d", req.ContentLength, len(seen))
		}
	}))
	defer srv.Close()
	body, _ := json.Marshal(map[string]string{"body": "the file:\n" + testKubeconfig})
	resp, err := (&http.Client{Transport: r.Transport(http.DefaultTransport)}).Post(srv.URL, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	for _, secret := range []string{"kube-token-0123456789", "p4ssw0rd-secret", "oidc-client-secret", "exec-env-api-key", "LS0tLS1CRUdJTiBLRVktLS0tLQ=="} {
		if bytes.Contains(seen, []byte(secret)) {
			t.Errorf("the request to GitHub holds %q:\n%s", secret, seen)
		}
	}
	if !json.Valid(seen) || !bytes.Contains(seen, []byte("https://127.0.0.1:6443")) {
		t.Errorf("the redacted body is not the comment any more:\n%s", seen)
	}
}
