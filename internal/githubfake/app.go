package githubfake

import (
	"crypto"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"
)

// installRepo is a repository an installation of the App can reach.
type installRepo struct {
	installation int64
	owner, name  string
}

// appOnly are the operations GitHub takes only with the App's JWT; every
// other operation refuses it.
var appOnly = map[string]bool{
	"apps/get-authenticated":                true,
	"apps/list-installations":               true,
	"apps/get-installation":                 true,
	"apps/create-installation-access-token": true,
	"apps/get-repo-installation":            true,
	"apps/get-org-installation":             true,
	"apps/get-user-installation":            true,
	"apps/list-webhook-deliveries":          true,
	"apps/get-webhook-delivery":             true,
	"apps/redeliver-webhook-delivery":       true,
}

// SetAppKey makes the fake check App authentication as GitHub does: the
// App's endpoints want a JWT signed (RS256) with the App's private key,
// whose "iss" is appID and whose life is at most ten minutes; installation
// tokens reach only the repositories AddInstallationRepo gave their
// installation. Without it the fake takes any token anywhere.
func (s *Server) SetAppKey(appID int64, key *rsa.PublicKey) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.st.appID, s.st.appKey = appID, key
}

// AddInstallationRepo installs the App on owner/repo, as installation.
func (s *Server) AddInstallationRepo(installation int64, owner, repo string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.st.installRepos = append(s.st.installRepos, installRepo{installation: installation, owner: owner, name: repo})
}

// SetRepositoryID gives owner/repo GitHub's numeric id id, as the webhook
// payloads about it carry it; without it the API makes one up.
func (s *Server) SetRepositoryID(owner, repo string, id int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.st.repoIDs == nil {
		s.st.repoIDs = map[string]int64{}
	}
	s.st.repoIDs[repoKey(owner, repo)] = id
}

func unauthorized(message string) response {
	return ghError(http.StatusUnauthorized, message)
}

// checkAuth refuses a request whose credentials GitHub would refuse.
func (s *Server) checkAuth(rq *request, token string) (response, bool) {
	if s.st.appKey == nil {
		return response{}, true
	}
	isJWT := strings.Count(token, ".") == 2
	if appOnly[rq.op.id] {
		if !isJWT {
			return unauthorized("A JSON web token could not be decoded"), false
		}
		if err := s.verifyJWT(token, time.Now()); err != nil {
			return unauthorized(err.Error()), false
		}
		return response{}, true
	}
	if isJWT {
		return unauthorized("this operation takes an installation access token, not the App's JSON web token"), false
	}
	inst, ok := s.st.tokenInstall[token]
	if !ok || rq.params["owner"] == "" || rq.params["repo"] == "" {
		return response{}, true
	}
	if !s.installed(inst, rq.repo) || !inScope(s.st.tokenScope[token], rq.repo) {
		// GitHub hides what a token cannot reach.
		return notFound(), false
	}
	return response{}, true
}

// inScope: a token limited to some repositories of the installation
// reaches those only.
func inScope(scope []string, repo string) bool {
	if len(scope) == 0 {
		return true
	}
	_, name, _ := strings.Cut(repo, "/")
	for _, r := range scope {
		if r == name {
			return true
		}
	}
	return false
}

// installedName: the installation reaches a repository of this name.
func (s *Server) installedName(inst int64, name string) bool {
	for _, r := range s.st.installRepos {
		if r.installation == inst && strings.EqualFold(r.name, name) {
			return true
		}
	}
	return false
}

func (s *Server) installed(inst int64, repo string) bool {
	for _, r := range s.st.installRepos {
		if r.installation == inst && repoKey(r.owner, r.name) == repo {
			return true
		}
	}
	return false
}

// verifyJWT checks the App's token as GitHub documents it: RS256, iss the
// App's id, iat and exp present, exp at most ten minutes ahead.
func (s *Server) verifyJWT(token string, now time.Time) error {
	parts := strings.Split(token, ".")
	head, err := base64.RawURLEncoding.DecodeString(parts[0])
	if err != nil {
		return fmt.Errorf("A JSON web token could not be decoded")
	}
	var h struct {
		Alg string `json:"alg"`
	}
	if json.Unmarshal(head, &h) != nil || h.Alg != "RS256" {
		return fmt.Errorf("the JSON web token must be signed with RS256, not %q", h.Alg)
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		return fmt.Errorf("A JSON web token could not be decoded")
	}
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if rsa.VerifyPKCS1v15(s.st.appKey, crypto.SHA256, sum[:], sig) != nil {
		return fmt.Errorf("the JSON web token's signature does not match the App's public key")
	}
	body, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return fmt.Errorf("A JSON web token could not be decoded")
	}
	var c struct {
		Iss json.RawMessage `json:"iss"`
		Iat *int64          `json:"iat"`
		Exp *int64          `json:"exp"`
	}
	if err := json.Unmarshal(body, &c); err != nil {
		return fmt.Errorf("A JSON web token could not be decoded")
	}
	iss := strings.Trim(string(c.Iss), `"`)
	if iss != strconv.FormatInt(s.st.appID, 10) {
		return fmt.Errorf("'Issuer' claim ('iss') must be the App's id %d, not %s", s.st.appID, c.Iss)
	}
	switch {
	case c.Iat == nil || c.Exp == nil:
		return fmt.Errorf("the JSON web token needs 'iat' and 'exp' claims")
	case *c.Exp <= now.Unix():
		return fmt.Errorf("'Expiration time' claim ('exp') must be a numeric value representing the future time at which the assertion expires")
	case *c.Exp > now.Add(10*time.Minute+30*time.Second).Unix():
		return fmt.Errorf("'Expiration time' claim ('exp') is too far in the future")
	case *c.Iat > now.Add(time.Minute).Unix():
		return fmt.Errorf("'Issued at' claim ('iat') must be an Integer representing the time that the assertion was issued")
	}
	return nil
}

// installations are the ids AddInstallationRepo named, in order.
func (s *Server) installations() []int64 {
	var ids []int64
	seen := map[int64]bool{}
	for _, r := range s.st.installRepos {
		if !seen[r.installation] {
			seen[r.installation] = true
			ids = append(ids, r.installation)
		}
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}

func (s *Server) installationJSON(opID, status string, id int64) map[string]any {
	m := s.template(opID, status)
	set(m, "id", id)
	set(m, "app_id", s.st.appID)
	set(m, "access_tokens_url", s.apiURL("/app/installations/%d/access_tokens", id))
	set(m, "repositories_url", s.apiURL("/installation/repositories"))
	set(m, "repository_selection", "selected")
	for _, r := range s.st.installRepos {
		if r.installation == id {
			withUser(m, "account", r.owner)
			break
		}
	}
	return m
}

// installation answers GET /app/installations/{id} and
// GET /repos/{owner}/{repo}/installation.
func (s *Server) installation(rq *request) response {
	id := intParam(rq, "installation_id")
	if rq.op.id == "apps/get-repo-installation" {
		id = 0
		for _, r := range s.st.installRepos {
			if repoKey(r.owner, r.name) == rq.repo {
				id = r.installation
			}
		}
	}
	if id == 0 || (s.st.appKey != nil && !containsID(s.installations(), id)) {
		return notFound()
	}
	return response{status: http.StatusOK, body: s.installationJSON(rq.op.id, "200", id)}
}

// AppLogin is the login the App's installation tokens act as.
func (s *Server) AppLogin() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.st.appLogin
}

func containsID(ids []int64, id int64) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

func (s *Server) listInstallations(rq *request) response {
	ids := s.installations()
	from, to, h := page(rq, len(ids))
	out := []any{}
	for _, id := range ids[from:to] {
		out = append(out, s.installationJSON(rq.op.id, "200", id))
	}
	return response{status: http.StatusOK, body: out, header: h}
}

// installationRepos answers GET /installation/repositories for the
// installation the token was issued to.
func (s *Server) installationRepos(rq *request) response {
	inst, ok := s.st.tokenInstall[bearer(rq.r.Header.Get("Authorization"))]
	if !ok {
		return ghError(http.StatusForbidden, "This endpoint takes an installation access token")
	}
	var repos []installRepo
	for _, r := range s.st.installRepos {
		if r.installation == inst {
			repos = append(repos, r)
		}
	}
	from, to, h := page(rq, len(repos))
	tmpl := s.template(rq.op.id, "200")
	var first map[string]any
	if l := list(tmpl["repositories"]); len(l) > 0 {
		first, _ = l[0].(map[string]any)
	}
	items := []any{}
	for i, r := range repos[from:to] {
		m, _ := deepCopy(first).(map[string]any)
		if m == nil {
			m = map[string]any{}
		}
		id := s.st.repoIDs[repoKey(r.owner, r.name)]
		if id == 0 {
			id = int64(100000 + from + i)
		}
		set(m, "id", id)
		set(m, "name", r.name)
		set(m, "full_name", r.owner+"/"+r.name)
		withUser(m, "owner", r.owner)
		set(m, "url", s.apiURL("/repos/%s/%s", r.owner, r.name))
		set(m, "html_url", fmt.Sprintf("https://github.com/%s/%s", r.owner, r.name))
		set(m, "fork", false)
		items = append(items, m)
	}
	set(tmpl, "total_count", len(repos))
	set(tmpl, "repositories", items)
	set(tmpl, "repository_selection", "selected")
	return response{status: http.StatusOK, body: tmpl, header: h}
}
