package cloudtoken

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// azureExchangeAudience is the audience Entra ID's federated credentials
// expect of a GitHub token, and the one azure/login asks for.
const azureExchangeAudience = "api://AzureADTokenExchange"

// githubOIDC fetches a GitHub Actions job's OIDC token, as the runner
// offers it to a job with `permissions: id-token: write`: a GET of
// ACTIONS_ID_TOKEN_REQUEST_URL with the audience, authorised by
// ACTIONS_ID_TOKEN_REQUEST_TOKEN. azure/login logs az in with it; the
// image has no az, so the token is exchanged here, as Terraform's
// azurerm provider does with ARM_USE_OIDC.
type githubOIDC struct {
	requestURL, requestToken string
	client                   *http.Client
}

// githubOIDCFrom is the job's token source, or nil outside a job that
// may ask for one. client nil means the default transport.
func githubOIDCFrom(getenv func(...string) string, client *http.Client) *githubOIDC {
	u, tok := getenv("ACTIONS_ID_TOKEN_REQUEST_URL"), getenv("ACTIONS_ID_TOKEN_REQUEST_TOKEN")
	if u == "" || tok == "" {
		return nil
	}
	if client == nil {
		client = &http.Client{Timeout: 30 * time.Second}
	}
	return &githubOIDC{requestURL: u, requestToken: tok, client: client}
}

// maxOIDCResponse bounds the runner's answer; a token is a few KB.
const maxOIDCResponse = 64 << 10

// Token returns a GitHub OIDC token for audience. Errors carry the status
// and the service's message, never either token.
func (g *githubOIDC) Token(ctx context.Context, audience string) (string, error) {
	u, err := url.Parse(g.requestURL)
	if err != nil {
		return "", errors.New("ACTIONS_ID_TOKEN_REQUEST_URL is not a URL")
	}
	q := u.Query()
	q.Set("audience", audience)
	u.RawQuery = q.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("Authorization", "Bearer "+g.requestToken)
	req.Header.Set("Accept", "application/json")
	resp, err := g.client.Do(req)
	if err != nil {
		// The URL holds no secret, but its host is what the reader needs.
		return "", fmt.Errorf("requesting the GitHub Actions OIDC token from %s: %w", u.Host, unwrapURLError(err))
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxOIDCResponse))
	if err != nil {
		return "", fmt.Errorf("reading the GitHub Actions OIDC token: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("requesting the GitHub Actions OIDC token: %s (does the job have `permissions: id-token: write`?)", resp.Status)
	}
	var out struct {
		Value string `json:"value"`
	}
	if err := json.Unmarshal(body, &out); err != nil || strings.Count(out.Value, ".") != 2 {
		return "", errors.New("the GitHub Actions OIDC token endpoint answered without a token")
	}
	return out.Value, nil
}

// unwrapURLError drops url.Error's quoting of the whole URL.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
