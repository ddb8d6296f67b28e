package cloudfake

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
)

// GoogleProvider is a workload identity provider of the test pool, as
// google-github-actions/auth's workload_identity_provider names it.
const GoogleProvider = "projects/" + GKEProject + "/locations/global/workloadIdentityPools/github/providers/acme"

// GooglePrincipal is who the cluster sees for GitHubSubject's federated
// token, without impersonation.
const GooglePrincipal = "principal://iam.googleapis.com/projects/" + GKEProject + "/locations/global/workloadIdentityPools/github/subject/" + GitHubSubject

// GoogleCredentials is the credentials file google-github-actions/auth
// writes for GoogleProvider against the stand-in at base: the job's
// token from its OIDC endpoint, exchanged at STS and, when account is
// set, traded for that service account's.
func GoogleCredentials(base, account string) []byte {
	m := map[string]any{
		"type": "external_account", "audience": "//iam.googleapis.com/" + GoogleProvider,
		"subject_token_type": "urn:ietf:params:oauth:token-type:jwt", "token_url": base + "/google/sts/v1/token",
		"credential_source": map[string]any{
			"url":     base + "/github/token?api-version=2.0&audience=https://iam.googleapis.com/" + GoogleProvider,
			"headers": map[string]string{"Authorization": "Bearer " + RequestToken},
			"format":  map[string]string{"type": "json", "subject_token_field_name": "value"},
		},
	}
	if account != "" {
		m["service_account_impersonation_url"] = base + "/google/iamcredentials/v1/projects/-/serviceAccounts/" + account + ":generateAccessToken"
	}
	b, _ := json.Marshal(m)
	return b
}

// GitHubToken fetches a job's OIDC token for audience from the stand-in
// at base, as a login action does.
func GitHubToken(ctx context.Context, client *http.Client, base, audience string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/github/token?api-version=2.0&audience="+url.QueryEscape(audience), nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("Authorization", "Bearer "+RequestToken)
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var out struct{ Value string }
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return "", err
	}
	if out.Value == "" {
		return "", errors.New("no token: " + resp.Status)
	}
	return out.Value, nil
}
