package cloudtoken

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/google"
)

// gkeScopes are what gke-gcloud-auth-plugin asks for.
var gkeScopes = []string{
	"https://www.googleapis.com/auth/cloud-platform",
	"https://www.googleapis.com/auth/userinfo.email",
}

// gkeNoExpiryLifetime bounds reuse of a token reported without expiry,
// so the cache still asks the SDK (which has its own reuse) now and then.
const gkeNoExpiryLifetime = 5 * time.Minute

type gkeSource struct {
	identity string
	ts       oauth2.TokenSource
	now      func() time.Time
}

func newGKESource(ctx context.Context, p Plugin, opts Options) (*gkeSource, error) {
	// The SDK keeps the context for later refreshes; the caller's may be
	// a request's, cancelled long before the next refresh.
	ctx = context.WithoutCancel(ctx)
	if opts.HTTPClient != nil {
		ctx = context.WithValue(ctx, oauth2.HTTPClient, opts.HTTPClient)
	}
	var (
		creds *google.Credentials
		err   error
	)
	// The exec entry's env may name the credentials file, as it would
	// for the plugin; otherwise Application Default Credentials are
	// searched as usual (env, well-known file, metadata server).
	if file := p.getenv(opts, "GOOGLE_APPLICATION_CREDENTIALS"); file != "" {
		identity := "credentials file " + file
		data, rerr := os.ReadFile(file)
		if rerr != nil {
			return nil, &Error{Cloud: GKE, Identity: identity, Doing: "reading Application Default Credentials", Err: rerr}
		}
		if err := refuseExecutableSource(data); err != nil {
			return nil, &Error{Cloud: GKE, Identity: identity, Doing: "checking Application Default Credentials", Err: err}
		}
		creds, err = google.CredentialsFromJSONWithParams(ctx, data, google.CredentialsParams{Scopes: gkeScopes})
		if err != nil {
			return nil, &Error{Cloud: GKE, Identity: identity, Doing: "parsing Application Default Credentials", Err: err}
		}
	} else {
		creds, err = google.FindDefaultCredentials(ctx, gkeScopes...)
		if err != nil {
			return nil, &Error{Cloud: GKE, Identity: "Application Default Credentials", Doing: "finding credentials",
				Err: fmt.Errorf("%w (in a GitHub Actions job, google-github-actions/auth sets GOOGLE_APPLICATION_CREDENTIALS; in a GKE pod, Workload Identity answers on the metadata server)", err)}
		}
		if err := refuseExecutableSource(creds.JSON); err != nil {
			return nil, &Error{Cloud: GKE, Identity: "Application Default Credentials", Doing: "checking credentials", Err: err}
		}
	}
	return &gkeSource{identity: gkeIdentity(creds.JSON), ts: creds.TokenSource, now: opts.now}, nil
}

// refuseExecutableSource refuses external_account credentials whose
// subject token comes from running a command: computing tokens in
// process is the point, and the SDK would otherwise run it when
// GOOGLE_EXTERNAL_ACCOUNT_ALLOW_EXECUTABLES=1 is set.
func refuseExecutableSource(data []byte) error {
	if len(data) == 0 {
		return nil
	}
	var f struct {
		CredentialSource struct {
			Executable json.RawMessage `json:"executable"`
		} `json:"credential_source"`
	}
	if err := json.Unmarshal(data, &f); err != nil {
		return fmt.Errorf("parsing credentials JSON: %w", err)
	}
	if len(f.CredentialSource.Executable) > 0 && string(f.CredentialSource.Executable) != "null" {
		return errors.New("external_account credential_source.executable would run a command; use a file or URL source")
	}
	return nil
}

// gkeIdentity names the identity from the credentials JSON: the service
// account, the impersonated one, or the kind of credential.
func gkeIdentity(data []byte) string {
	if len(data) == 0 {
		return "the metadata server's service account"
	}
	var f struct {
		Type                           string `json:"type"`
		ClientEmail                    string `json:"client_email"`
		ClientID                       string `json:"client_id"`
		Audience                       string `json:"audience"`
		ServiceAccountImpersonationURL string `json:"service_account_impersonation_url"`
	}
	if err := json.Unmarshal(data, &f); err != nil {
		return "Application Default Credentials"
	}
	switch {
	case f.ServiceAccountImpersonationURL != "":
		// .../serviceAccounts/NAME@PROJECT.iam.gserviceaccount.com:generateAccessToken
		sa := f.ServiceAccountImpersonationURL
		if i := strings.LastIndex(sa, "/"); i >= 0 {
			sa = sa[i+1:]
		}
		sa, _, _ = strings.Cut(sa, ":")
		return fmt.Sprintf("%s credentials impersonating service account %s", f.Type, sa)
	case f.ClientEmail != "":
		return "service account " + f.ClientEmail
	case f.Type == "external_account":
		return "external_account for audience " + f.Audience
	case f.ClientID != "":
		return fmt.Sprintf("%s credentials of OAuth client %s", f.Type, f.ClientID)
	default:
		return f.Type + " credentials"
	}
}

func (s *gkeSource) describe() string { return fmt.Sprintf("%s token for %s", GKE, s.identity) }

// Token returns an OAuth2 access token from Application Default
// Credentials, which the GKE API server accepts as gke-gcloud-auth-plugin's.
func (s *gkeSource) Token(ctx context.Context) (Token, error) {
	t, err := s.ts.Token()
	if err != nil {
		return Token{}, &Error{Cloud: GKE, Identity: s.identity, Doing: "getting an access token", Err: err}
	}
	exp := t.Expiry
	if exp.IsZero() {
		exp = s.now().Add(gkeNoExpiryLifetime)
	}
	return Token{Value: t.AccessToken, Expiry: exp}, nil
}
