package githubfake

import (
	"crypto/rsa"
	"fmt"
	"strings"
	"time"
)

// GitHub's limits beyond the schema.
const (
	maxCommentLength  = 65536 // characters of an issue comment's body
	maxStatusDescLen  = 140   // characters of a commit status' description
	maxFilesListed    = 3000  // files GitHub lists of one pull request
	defaultActorLogin = "github-actions[bot]"
)

// state is what the fake remembers. It is guarded by Server.mu.
type state struct {
	appLogin    string
	nextID      int64
	tokens      map[string]string // token -> login it acts as
	pulls       map[string]*pull  // by repo#number
	files       map[string][]PullFile
	commitPulls map[string][]int // by repo@sha
	comments    []*comment       // in creation order
	issues      []*issue         // in creation order
	checkRuns   []*checkRun
	deployments []*deployment
	statuses    []*status
	perms       map[string]string // by repo/login, lower-case
	reactions   []*reaction
	reviews     map[string][]*review // by repo#number
	tick        int64                // orders pulls' creation and updates

	trees      map[string]*tree    // by repo@ref
	downloads  map[string]string   // codeload token -> repo@ref it was issued for
	parents    map[string][]string // by repo@sha: the commit graph a comparison reads (SetParents)
	branches   map[string]string   // by repo@branch: the commit it points at (SetBranch)
	commits    map[string]Commit   // by repo@sha: message and author (SetCommit)
	activities []*activity         // branch updates, oldest first (Push)

	workflows         map[string]Workflow // by repo/file
	runs              []*actionsRun       // in dispatch order
	onDispatch        func(Dispatch)
	dispatchNoRun     bool                 // dispatches answer 204 whatever they ask (AnswerDispatchWithoutRun)
	userIDs           map[string]int64     // by lower-case login: the ids the fake gave accounts
	artifactDownloads map[string]*artifact // pre-signed token -> artifact

	appID        int64
	appKey       *rsa.PublicKey // nil: /app requests take any token
	installRepos []installRepo
	repoIDs      map[string]int64    // by repo key: GitHub's id, when a test set one
	tokenInstall map[string]int64    // installation token -> its installation
	tokenScope   map[string][]string // installation token -> the repository names it was limited to

	// The App's webhook, and its delivery log, oldest first.
	hookURL, hookSecret string
	hooks               []hookAttempt
}

type pull struct {
	number          int
	head, base      string
	fork, merged    bool
	state, mergeSHA string
	author          string // "" keeps the documented example's
	commits         int    // 0 keeps the documented example's (SetPullCommits)
	headRef         string // "" keeps the documented example's
	// mergeableState is GitHub's mergeable_state; "" keeps the example's.
	mergeableState       string
	unknownReads         int  // reads left that answer mergeable null (SetMergeableAfter)
	headGone             bool // the head repository was deleted (SetHeadRepoDeleted)
	repoIsFork           bool // the repository itself is a fork (SetRepositoryIsFork)
	created, updated     time.Time
	createdSeq, touchSeq int64 // tell apart pulls made within one second
	mergedAt             time.Time
}

type comment struct {
	repo, owner, name string // repo is the lower-case key; owner/name as first written
	issue             int
	Comment
	created, updated time.Time
}

// Comment is an issue or pull request comment as GitHub keeps it.
type Comment struct {
	ID         int64
	Body, User string
	HTMLURL    string
}

type checkRun struct {
	repo string
	CheckRun
	app                    CheckApp
	detailsURL, externalID string
	started, completed     string
}

// CheckAction is a button of a check run: pressing it sends its App a
// check_run requested_action event with the identifier.
type CheckAction struct {
	Label, Description, Identifier string
}

// CheckRun is a check run as GitHub keeps it.
type CheckRun struct {
	ID                                                int64
	Name, HeadSHA, Status, Conclusion, Title, Summary string
	Text                                              string
	// Actions are the buttons the check run offers.
	Actions []CheckAction
}

type status struct {
	repo, sha string
	Status
	id        int64
	targetURL string
	creator   string
	at        string
}

// Status is a commit status.
type Status struct {
	Context, State, Description string
}

type reaction struct {
	repo      string
	commentID int64
	id        int64
	content   string
	user      string
}

// PullFile is one file of a pull request's diff.
type PullFile struct {
	Filename         string
	Status           string // added, modified, removed, renamed
	PreviousFilename string // for renamed
}

func newState(d *description) state {
	st := state{
		nextID: 1000, tokens: map[string]string{}, pulls: map[string]*pull{},
		files: map[string][]PullFile{}, commitPulls: map[string][]int{}, perms: map[string]string{},
		reviews: map[string][]*review{}, trees: map[string]*tree{}, downloads: map[string]string{}, tokenInstall: map[string]int64{}, tokenScope: map[string][]string{},
		appLogin: "octoapp[bot]",
	}
	// Installation tokens act as the app; GitHub's example app is "octoapp".
	if ex := d.resolve(map[string]any{"$ref": "#/components/examples/integration"}); ex != nil {
		if v, _ := ex["value"].(map[string]any); v != nil && str(v["slug"]) != "" {
			st.appLogin = str(v["slug"]) + "[bot]"
		}
	}
	return st
}

func (st *state) id() int64 { st.nextID++; return st.nextID }

// touch marks a pull request updated, for sort=updated.
func (st *state) touch(p *pull) {
	st.tick++
	p.updated, p.touchSeq = time.Now(), st.tick
}

func (st *state) userOf(token string) string {
	if u := st.tokens[token]; u != "" {
		return u
	}
	return defaultActorLogin
}

func repoKey(owner, repo string) string { return strings.ToLower(owner + "/" + repo) }

func pullKey(repo string, n int) string { return fmt.Sprintf("%s#%d", repo, n) }

// SetTokenUser makes requests with token act as login (the author of the
// comments they create). Tokens default to github-actions[bot]; tokens the
// fake issued for an app installation act as the app.
func (s *Server) SetTokenUser(token, login string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.st.tokens[token] = login
}

// SetPullRequest makes pull request number exist, open, with head commit
// head and base branch base; fork says whether its head repository is a
// fork.
func (s *Server) SetPullRequest(owner, repo string, number int, head, base string, fork bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.st.tick++
	now := time.Now()
	s.st.pulls[pullKey(repoKey(owner, repo), number)] = &pull{
		number: number, head: head, base: base, fork: fork, state: "open",
		created: now, updated: now, createdSeq: s.st.tick, touchSeq: s.st.tick,
	}
}

// MergePullRequest closes a pull request SetPullRequest made as merged,
// with merge commit sha, now.
func (s *Server) MergePullRequest(owner, repo string, number int, sha string) {
	s.MergePullRequestAt(owner, repo, number, sha, time.Now())
}

// MergePullRequestAt is MergePullRequest at a given time (merged_at).
func (s *Server) MergePullRequestAt(owner, repo string, number int, sha string, at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.st.pulls[pullKey(repoKey(owner, repo), number)]
	if p == nil {
		panic(fmt.Sprintf("githubfake: MergePullRequest of %s/%s#%d before SetPullRequest", owner, repo, number))
	}
	p.state, p.merged, p.mergeSHA = "closed", true, sha
	s.st.touch(p)
	p.mergedAt = at
}

// SetPullFiles sets the files a pull request changes.
func (s *Server) SetPullFiles(owner, repo string, number int, files []PullFile) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.st.files[pullKey(repoKey(owner, repo), number)] = append([]PullFile(nil), files...)
}

// SetCommitPulls sets the pull requests commit sha belongs to.
func (s *Server) SetCommitPulls(owner, repo, sha string, numbers []int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.st.commitPulls[repoKey(owner, repo)+"@"+sha] = append([]int(nil), numbers...)
}

// SetPermission sets user's permission on the repository (admin, maintain,
// write, triage, read). Users without one are no collaborators: 404.
func (s *Server) SetPermission(owner, repo, user, permission string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.st.perms[repoKey(owner, repo)+"/"+strings.ToLower(user)] = permission
}

// Comments returns the comments on an issue or pull request, in order.
func (s *Server) Comments(owner, repo string, issue int) []Comment {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Comment
	for _, c := range s.st.comments {
		if c.repo == repoKey(owner, repo) && c.issue == issue {
			out = append(out, c.Comment)
		}
	}
	return out
}

// CheckRuns returns the repository's check runs in creation order.
func (s *Server) CheckRuns(owner, repo string) []CheckRun {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []CheckRun
	for _, c := range s.st.checkRuns {
		if c.repo == repoKey(owner, repo) {
			out = append(out, c.CheckRun)
		}
	}
	return out
}

// Statuses returns the statuses set on commit sha, in order.
func (s *Server) Statuses(owner, repo, sha string) []Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Status
	for _, st := range s.st.statuses {
		if st.repo == repoKey(owner, repo) && st.sha == sha {
			out = append(out, st.Status)
		}
	}
	return out
}

// Reactions returns the contents ("+1", "eyes", ...) of the reactions to an
// issue comment, in order.
func (s *Server) Reactions(owner, repo string, commentID int64) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, r := range s.st.reactions {
		if r.repo == repoKey(owner, repo) && r.commentID == commentID {
			out = append(out, r.content)
		}
	}
	return out
}
