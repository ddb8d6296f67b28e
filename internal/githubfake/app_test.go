package githubfake

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/bradleyfalzon/ghinstallation/v2"
	"github.com/google/go-github/v60/github"
	ghv88 "github.com/google/go-github/v88/github"
)

func appKey(t *testing.T) (*rsa.PrivateKey, []byte) {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return key, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
}

// installationClient is a go-github client authenticated the way a GitHub
// App authenticates, with ghinstallation.
func installationClient(t *testing.T, s *Server, appID, installation int64, pemKey []byte) *github.Client {
	t.Helper()
	tr, err := ghinstallation.New(http.DefaultTransport, appID, installation, pemKey)
	if err != nil {
		t.Fatal(err)
	}
	tr.BaseURL = strings.TrimSuffix(s.URL, "/")
	c, err := github.NewClient(&http.Client{Transport: tr}).WithEnterpriseURLs(s.URL, s.URL)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestAppAuthentication(t *testing.T) {
	ctx := context.Background()
	key, pemKey := appKey(t)
	s := New(t)
	s.SetAppKey(42, &key.PublicKey)
	s.AddInstallationRepo(7, "octo", "web")
	s.AddInstallationRepo(7, "octo", "api")
	s.AddInstallationRepo(8, "other", "site")
	s.SetPullRequest("octo", "web", 1, "abc", "main", false)

	gh := installationClient(t, s, 42, 7, pemKey)
	if _, _, err := gh.PullRequests.Get(ctx, "octo", "web", 1); err != nil {
		t.Fatalf("an installed repository: %v", err)
	}
	repos, _, err := gh.Apps.ListRepos(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range repos.Repositories {
		names = append(names, r.GetFullName())
	}
	if strings.Join(names, ",") != "octo/web,octo/api" || repos.GetTotalCount() != 2 {
		t.Errorf("installation 7 lists %v (total %d), want octo/web, octo/api", names, repos.GetTotalCount())
	}

	atr, err := ghinstallation.NewAppsTransport(http.DefaultTransport, 42, pemKey)
	if err != nil {
		t.Fatal(err)
	}
	atr.BaseURL = strings.TrimSuffix(s.URL, "/")
	app, _ := github.NewClient(&http.Client{Transport: atr}).WithEnterpriseURLs(s.URL, s.URL)
	ins, _, err := app.Apps.ListInstallations(ctx, nil)
	if err != nil || len(ins) != 2 || ins[0].GetID() != 7 || ins[1].GetID() != 8 {
		t.Errorf("installations %v, %v; want 7 and 8", ins, err)
	}
}

func TestAppAuthenticationRefusals(t *testing.T) {
	ctx := context.Background()
	key, pemKey := appKey(t)
	_, otherPEM := appKey(t)
	s := newServer(t, false, nil)
	s.SetAppKey(42, &key.PublicKey)
	s.AddInstallationRepo(7, "octo", "web")
	s.SetPullRequest("octo", "elsewhere", 1, "abc", "main", false)

	for _, tc := range []struct {
		name         string
		appID, inst  int64
		pem          []byte
		owner, repo  string
		status       int
		wantInAnswer string
	}{
		{"a key that is not the App's", 42, 7, otherPEM, "octo", "web", 401, "signature does not match"},
		{"another App's id", 43, 7, pemKey, "octo", "web", 401, "'iss'"},
		{"an installation that does not exist", 42, 9, pemKey, "octo", "web", 404, ""},
		{"a repository the installation does not reach", 42, 7, pemKey, "octo", "elsewhere", 404, "Not Found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gh := installationClient(t, s, tc.appID, tc.inst, tc.pem)
			before := len(s.Violations())
			_, _, err := gh.PullRequests.Get(ctx, tc.owner, tc.repo, 1)
			if err == nil {
				t.Fatal("the request was answered")
			}
			if !strings.Contains(err.Error(), fmt.Sprint(tc.status)) {
				t.Errorf("got %v, want %d", err, tc.status)
			}
			// Credentials GitHub refuses are the client's fault, and the
			// fake says what was wrong with them; an installation that is
			// gone is not.
			v := s.Violations()[before:]
			if tc.wantInAnswer == "" && len(v) != 0 {
				t.Errorf("the fake blamed the client: %q", v)
			}
			if tc.wantInAnswer != "" && (len(v) != 1 || !strings.Contains(v[0], tc.wantInAnswer)) {
				t.Errorf("the fake's reasons %q, want one naming %q", v, tc.wantInAnswer)
			}
		})
	}
	// A JWT is for the App's own endpoints only.
	if status, body := raw(t, s, "GET", "/repos/octo/web/pulls/1", "", false); status == 200 {
		t.Errorf("an unauthenticated request was answered: %s", body)
	}
}

func TestScopedInstallationToken(t *testing.T) {
	ctx := context.Background()
	key, pemKey := appKey(t)
	s := newServer(t, false, nil)
	s.SetAppKey(42, &key.PublicKey)
	s.AddInstallationRepo(7, "octo", "web")
	s.AddInstallationRepo(7, "octo", "api")
	s.SetPullRequest("octo", "web", 1, "abc", "main", false)
	s.SetPullRequest("octo", "api", 1, "abc", "main", false)
	scoped := func(repos ...string) *github.Client {
		tr, err := ghinstallation.New(http.DefaultTransport, 42, 7, pemKey)
		if err != nil {
			t.Fatal(err)
		}
		tr.BaseURL = strings.TrimSuffix(s.URL, "/")
		tr.InstallationTokenOptions = &ghv88.InstallationTokenOptions{Repositories: repos}
		c, _ := github.NewClient(&http.Client{Transport: tr}).WithEnterpriseURLs(s.URL, s.URL)
		return c
	}
	web := scoped("web")
	if _, _, err := web.PullRequests.Get(ctx, "octo", "web", 1); err != nil {
		t.Errorf("a token for web reading web: %v", err)
	}
	if _, _, err := web.PullRequests.Get(ctx, "octo", "api", 1); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("a token for web reading api: %v, want 404", err)
	}
	if _, _, err := scoped("elsewhere").PullRequests.Get(ctx, "octo", "web", 1); err == nil || !strings.Contains(err.Error(), "422") {
		t.Errorf("a token asked for a repository the installation does not reach: %v, want 422", err)
	}
}
