package workflow

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kusionpr/kusionpr/engine"
	"github.com/kusionpr/kusionpr/githubapi"
	"github.com/kusionpr/kusionpr/model"
	"github.com/kusionpr/kusionpr/policy"
)

// folders is a FolderReader of commits' folders.
type folders map[string]map[string][]byte

func (f folders) FolderAt(_ context.Context, dir, ref string, _ githubapi.ArchiveLimits) (map[string][]byte, error) {
	if ref == "broken" {
		return nil, errors.New("502 Bad Gateway")
	}
	return f[ref+":"+dir], nil
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
	gh := folders{"base1:policy": {"base.rego": []byte(denyAll), "notes.txt": []byte("x")}}
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
		loadError string
	}{
		{name: "the base's, through GitHub", src: PolicySource{Folder: "policy", Ref: "base1", GitHub: gh, Checkout: checkout}, files: []string{"policy/base.rego"}},
		{name: "the checkout's, for a merge", src: PolicySource{Folder: "policy", Checkout: checkout, SHA: "abc"}, files: []string{"policy/head.rego"}},
		{name: "none at the base", src: PolicySource{Folder: "policy", Ref: "base2", GitHub: gh, Checkout: checkout}},
		{name: "the operator's alone", src: PolicySource{Folder: "policy", Ref: "base2", GitHub: gh, Extra: map[string]string{"operator/org/a.rego": denyAll}}, files: []string{"operator/org/a.rego"}},
		{name: "GitHub failing", src: PolicySource{Folder: "policy", Ref: "broken", GitHub: gh, Extra: map[string]string{"operator/org/a.rego": denyAll}}, loadError: "reading policy/ at broken: 502 Bad Gateway"},
		{name: "no client for the base", src: PolicySource{Folder: "policy", Ref: "base1", Checkout: checkout}, loadError: "no GitHub client"},
		{name: "a pull request's, at its base", src: PolicySource{Folder: "policy", GitHub: gh, Checkout: checkout, PullRequest: &policy.PullRequest{Number: 7, Base: "base1", Head: "head7"}}, files: []string{"policy/base.rego"}},
		{name: "a pull request without a base commit", src: PolicySource{Folder: "policy", GitHub: gh, Checkout: checkout, PullRequest: &policy.PullRequest{Number: 7, Head: "head7"}}, loadError: "no base commit of the pull request"},
		{name: "a pull request without a base, no folder read", src: PolicySource{Checkout: checkout, PullRequest: &policy.PullRequest{Number: 7}}},
		{name: "no folder", src: PolicySource{Checkout: checkout}},
		{name: "a link to a file outside", src: PolicySource{Folder: "policy", Checkout: linked, SHA: "abc"}, loadError: "creds.rego: not a regular file (a symbolic link?): refused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := LoadPolicies(t.Context(), tc.src)
			if tc.files == nil && tc.loadError == "" {
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
				if o := p.judge(t.Context(), &engine.Preview{}, nil, "apps/x"); o.Refused() == nil {
					t.Error("an unreadable folder let the plan pass")
				}
				return
			}
			var got []string
			for name := range p.Files {
				got = append(got, name)
			}
			if strings.Join(got, ",") != strings.Join(tc.files, ",") {
				t.Errorf("files %v, want %v", got, tc.files)
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
	req, err := NewRequest(Apply, dir, Options{CheckoutRoot: root, Policy: p, Origin: &model.Origin{SHA: "abcdef1"}})
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
	_, opts := got.Options(t.TempDir(), Options{})
	o := opts.Policy.judge(t.Context(), &engine.Preview{Project: "p", Stack: "x", Workspace: "w", ChangeSteps: map[string]*engine.Step{}}, nil, "apps/x")
	var denied *PolicyDenied
	if err := o.Refused(); !errors.As(err, &denied) || !strings.Contains(err.Error(), "no-anything: no") {
		t.Fatalf("the worker's judgement: %v (outcome %+v)", err, o)
	}
	opts.Policy.Overrides = []string{"no-anything"}
	if err := opts.Policy.judge(t.Context(), &engine.Preview{ChangeSteps: map[string]*engine.Step{}}, nil, "apps/x").Refused(); err != nil {
		t.Errorf("an override of the rule: %v", err)
	}
}
