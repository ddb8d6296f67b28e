package workflow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kusionpr/kusionpr/engine"
	"github.com/kusionpr/kusionpr/githubapi"
	"github.com/kusionpr/kusionpr/model"
	"github.com/kusionpr/kusionpr/policy"
)

// folders is a PolicyReader of commits' folders ("sha:dir"), branches'
// heads ("branch") and commits' parents ("sha^": parents, message,
// author's email and date, separated by spaces).
type folders map[string]map[string][]byte

func (f folders) FolderAt(_ context.Context, dir, ref string, _ githubapi.ArchiveLimits) (map[string][]byte, error) {
	if ref == "broken" {
		return nil, errors.New("502 Bad Gateway")
	}
	return f[ref+":"+dir], nil
}

func (f folders) BranchHead(_ context.Context, branch string) (string, error) {
	for sha := range f[branch] {
		return sha, nil
	}
	return "", fmt.Errorf("read the head of branch %s: 404 Not Found", branch)
}

func (f folders) Commit(_ context.Context, sha string) (*githubapi.Commit, error) {
	c, ok := f[sha+"^"]
	if !ok {
		return nil, fmt.Errorf("read commit %s: 404 Not Found", sha)
	}
	out := &githubapi.Commit{SHA: sha, Message: string(c["message"]), AuthorEmail: string(c["email"])}
	out.AuthorDate, _ = time.Parse(time.RFC3339, string(c["date"]))
	if p := string(c["parents"]); p != "" {
		out.Parents = strings.Fields(p)
	}
	return out, nil
}

// branch says branch's head is sha.
func (f folders) branch(name, sha string) folders {
	f[name] = map[string][]byte{sha: nil}
	return f
}

// commit records sha with its parents, message, author's email and date.
func (f folders) commit(sha, message, email, date string, parents ...string) folders {
	f[sha+"^"] = map[string][]byte{"parents": []byte(strings.Join(parents, " ")), "message": []byte(message), "email": []byte(email), "date": []byte(date)}
	return f
}

const denyAll = "package main\n\ndeny contains {\"msg\": \"no\", \"rule\": \"no-anything\"} if { true }\n"

// TestLoadPolicies: the rules are read where the source says (the base's
// commit through GitHub, or the checkout), with the operator's; none at
// all is nil; a folder that cannot be read refuses (LoadError), never
// passes.
func TestLoadPolicies(t *testing.T) {
	checkout := t.TempDir()
	os.MkdirAll(filepath.Join(checkout, "policy"), 0o755)
	os.WriteFile(filepath.Join(checkout, "policy", "head.rego"), []byte(denyAll), 0o644)
	os.WriteFile(filepath.Join(checkout, "policy", "README.md"), []byte("not a rule"), 0o644)
	gh := folders{"base1:policy": {"base.rego": []byte(denyAll), "notes.txt": []byte("x")}}.branch("main", "base1")
	// A checkout whose policy folder links to a file of the runner's.
	secret := filepath.Join(t.TempDir(), "kubeconfig")
	os.WriteFile(secret, []byte("token: do-not-show"), 0o600)
	linked := t.TempDir()
	os.MkdirAll(filepath.Join(linked, "policy"), 0o755)
	if err := os.Symlink(secret, filepath.Join(linked, "policy", "creds.rego")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		src       PolicySource
		files     []string
		operator  []string
		loadError string
	}{
		{name: "the merge group's base, through GitHub", src: PolicySource{Folder: "policy", Base: "base1", BaseWhat: "the merge group's base", GitHub: gh, Checkout: checkout}, files: []string{"policy/base.rego"}},
		{name: "the checkout's, away from GitHub", src: PolicySource{Folder: "policy", Checkout: checkout, SHA: "abc"}, files: []string{"policy/head.rego"}},
		{name: "none at the base", src: PolicySource{Folder: "policy", Base: "base2", GitHub: gh, Checkout: checkout}},
		{name: "the operator's alone", src: PolicySource{Folder: "policy", Base: "base2", GitHub: gh, Operator: map[string]string{"operator/org/a.rego": denyAll}}, operator: []string{"operator/org/a.rego"}},
		{name: "the operator's and the repository's", src: PolicySource{Folder: "policy", Base: "base1", GitHub: gh, Operator: map[string]string{"operator/org/a.rego": denyAll}}, files: []string{"policy/base.rego"}, operator: []string{"operator/org/a.rego"}},
		{name: "GitHub failing", src: PolicySource{Folder: "policy", Base: "broken", BaseWhat: "the commit before the push", GitHub: gh, Operator: map[string]string{"operator/org/a.rego": denyAll}}, loadError: "reading policy/ at broken, the commit before the push: 502 Bad Gateway"},
		{name: "no client for the merge", src: PolicySource{Folder: "policy", Merge: &MergedChange{SHA: "m"}, Checkout: checkout}, loadError: "no GitHub client"},
		{name: "a pull request's, at its base branch", src: PolicySource{Folder: "policy", GitHub: gh, Checkout: checkout, BaseBranch: "main", PullRequest: &policy.PullRequest{Number: 7, Base: "base0", Head: "head7"}}, files: []string{"policy/base.rego"}},
		{name: "a pull request without a base branch", src: PolicySource{Folder: "policy", GitHub: gh, Checkout: checkout, PullRequest: &policy.PullRequest{Number: 7, Base: "base1", Head: "head7"}}, loadError: "no base branch of the pull request"},
		{name: "a pull request whose base branch is gone", src: PolicySource{Folder: "policy", GitHub: gh, Checkout: checkout, BaseBranch: "gone", PullRequest: &policy.PullRequest{Number: 7, Base: "base1", Head: "head7"}}, loadError: "read the head of branch gone: 404 Not Found"},
		{name: "a pull request without a base, no folder read", src: PolicySource{Checkout: checkout, PullRequest: &policy.PullRequest{Number: 7}}},
		{name: "no folder", src: PolicySource{Checkout: checkout}},
		{name: "a link to a file outside", src: PolicySource{Folder: "policy", Checkout: linked, SHA: "abc"}, loadError: "creds.rego: not a regular file (a symbolic link?): refused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := LoadPolicies(t.Context(), tc.src)
			if tc.files == nil && tc.operator == nil && tc.loadError == "" {
				if p != nil {
					t.Fatalf("no rules gave %+v", p)
				}
				return
			}
			if p == nil {
				t.Fatal("no policies")
			}
			if tc.loadError != "" {
				if !strings.Contains(p.LoadError, tc.loadError) {
					t.Errorf("LoadError %q, want %q", p.LoadError, tc.loadError)
				}
				if o := p.judge(t.Context(), nil, &engine.Preview{}, nil, "apps/x"); o.Refused() == nil {
					t.Error("an unreadable folder let the plan pass")
				}
				return
			}
			if got := slices.Sorted(maps.Keys(p.Files)); !slices.Equal(got, tc.files) {
				t.Errorf("the repository's files %v, want %v", got, tc.files)
			}
			if got := slices.Sorted(maps.Keys(p.Operator)); !slices.Equal(got, tc.operator) {
				t.Errorf("the operator's files %v, want %v", got, tc.operator)
			}
		})
	}
}

// TestPoliciesTravelWithTheRequest: an executor away from this process is
// handed the rules with the request and judges the plan as this process
// would: a denial refuses it unless an override names its rule.
func TestPoliciesTravelWithTheRequest(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "apps", "x")
	p := &Policies{Files: map[string]string{"policy/all.rego": denyAll}, Source: "policy/ at base1"}
	req, err := Request{Root: root, Policy: p, Origin: &model.Origin{SHA: "abcdef1"}}.For(Apply, dir)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	var got Request
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	o := got.Policy.judge(t.Context(), nil, &engine.Preview{Project: "p", Stack: "x", Workspace: "w", ChangeSteps: map[string]*engine.Step{}}, nil, "apps/x")
	var denied *PolicyDenied
	if err := o.Refused(); !errors.As(err, &denied) || !strings.Contains(err.Error(), "no-anything: no") {
		t.Fatalf("the worker's judgement: %v (outcome %+v)", err, o)
	}
	got.Policy.Overrides = []string{"no-anything"}
	if err := got.Policy.judge(t.Context(), nil, &engine.Preview{ChangeSteps: map[string]*engine.Step{}}, nil, "apps/x").Refused(); err != nil {
		t.Errorf("an override of the rule: %v", err)
	}
}

// TestRulesOfWhatWasThereBefore: each change is judged by the policy folder
// of the commit it was made onto, and the source says which: a pull
// request by its base branch's head now, not the base commit it recorded;
// a merge commit by its first parent; a squash by its parent; a rebase by
// the commit before the first it replayed (the commits between are the
// pull request's, one of which may delete the rule); a push by the commit
// before it.
func TestRulesOfWhatWasThereBefore(t *testing.T) {
	const date, later = "2026-11-20T10:00:00Z", "2026-11-21T09:00:00Z"
	gh := folders{}.branch("main", "main2").
		// main1 <- main2, then pull request 9's three commits p1 <- p2 <- p3
		// (p1 deletes the rule), merged as m (a merge commit), s (a
		// squash), or r1 <- r2 <- r3 (a rebase).
		commit("main2", "an earlier change", "dev@example.com", date, "main1").
		commit("p1", "delete the rule", "mallory@example.com", date, "main2").
		commit("p2", "more", "mallory@example.com", date, "p1").
		commit("p3", "the change the rule denies", "mallory@example.com", date, "p2").
		commit("m", "Merge pull request #9", "mallory@example.com", later, "main2", "p3").
		commit("s", "The change (#9)", "mallory@example.com", later, "main2").
		commit("r1", "delete the rule", "mallory@example.com", date, "main2").
		commit("r2", "more", "mallory@example.com", date, "r1").
		commit("r3", "the change the rule denies", "mallory@example.com", date, "r2").
		commit("odd", "the change the rule denies", "mallory@example.com", date, "x1").
		commit("x1", "a merge among the replayed", "mallory@example.com", date, "main2", "p1")
	for _, tc := range []struct {
		name   string
		src    PolicySource
		at     string
		source string
		err    string
	}{
		{name: "a pull request, by its base branch now", src: PolicySource{BaseBranch: "main", PullRequest: &policy.PullRequest{Number: 9, Base: "main1", Head: "p3"}}, at: "main2", source: "policy/ at main2, the head of main"},
		{name: "a merge commit, by its first parent", src: PolicySource{Merge: &MergedChange{SHA: "m", Head: "p3", Commits: 3}}, at: "main2", source: "policy/ at main2, the commit the merge was made onto"},
		{name: "a squash, by its parent", src: PolicySource{Merge: &MergedChange{SHA: "s", Head: "p3", Commits: 3}}, at: "main2"},
		{name: "a rebase, by the commit before the first replayed", src: PolicySource{Merge: &MergedChange{SHA: "r3", Head: "p3", Commits: 3}}, at: "main2"},
		{name: "a fast-forward, likewise", src: PolicySource{Merge: &MergedChange{SHA: "p3", Head: "p3", Commits: 3}}, at: "main2"},
		{name: "a rebase over a merge commit is not guessed at", src: PolicySource{Merge: &MergedChange{SHA: "odd", Head: "p3", Commits: 3}}, err: "is not one the rebase replayed"},
		{name: "a merge GitHub cannot read", src: PolicySource{Merge: &MergedChange{SHA: "gone", Head: "p3", Commits: 1}}, err: "read commit gone: 404"},
		{name: "a merge group, by its base", src: PolicySource{Base: "main2", BaseWhat: "the merge group's base"}, at: "main2", source: "policy/ at main2, the merge group's base"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			read := map[string]bool{}
			src := tc.src
			src.Folder, src.GitHub = "policy", recordingFolders{folders: gh, read: read}
			p := LoadPolicies(t.Context(), src)
			if tc.err != "" {
				if p == nil || !strings.Contains(p.LoadError, tc.err) {
					t.Fatalf("want a refusal with %q, got %+v", tc.err, p)
				}
				if o := p.judge(t.Context(), nil, &engine.Preview{}, nil, "apps/x"); o.Refused() == nil {
					t.Error("the plan passed")
				}
				return
			}
			if len(read) != 1 || !read[tc.at] {
				t.Errorf("the policy folder was read at %v, want %s", read, tc.at)
			}
			if tc.source != "" && (p == nil || p.Source != tc.source) {
				t.Errorf("source %+v, want %q", p, tc.source)
			}
		})
	}
}

// recordingFolders notes the commits a policy folder is read at.
type recordingFolders struct {
	folders
	read map[string]bool
}

func (r recordingFolders) FolderAt(ctx context.Context, dir, ref string, lim githubapi.ArchiveLimits) (map[string][]byte, error) {
	r.read[ref] = true
	return map[string][]byte{"a.rego": []byte(denyAll)}, nil
}
