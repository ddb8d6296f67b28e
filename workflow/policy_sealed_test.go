package workflow

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/kusionpr/kusionpr/engine"
	"github.com/kusionpr/kusionpr/model"
)

// operatorRule denies a project named evil, through lower and count, and
// allows only the accounts of a set it keeps in a package of its own.
const operatorRule = `package main

import data.org

deny contains {"msg": "the organisation allows no project named evil", "rule": "org-no-evil"} if {
	lower(input.project) == "evil"
}

deny contains {"msg": "the stack changes more than it may", "rule": "org-few-changes"} if {
	count(input.preview.changeSteps) > 1
}

deny contains {"msg": "the account is not allowed", "rule": "org-accounts"} if {
	not input.workspace in org.allowed_accounts
}
`

const operatorData = `package org

allowed_accounts contains "prod-4711"
allowed_accounts contains "dev-0815"
`

// TestOperatorRulesAreSealed: a repository's policy folder may add
// denials but can neither switch an operator's rule off (shadowing a
// builtin the rule calls, extending a set it reads) nor read the
// operator's data into a message.
func TestOperatorRulesAreSealed(t *testing.T) {
	evil := &engine.Preview{Project: "evil", Stack: "dev", Workspace: "sandbox-666",
		ChangeSteps: map[string]*engine.Step{"a": {ID: "a", Action: engine.Create}, "b": {ID: "b", Action: engine.Create}}}
	for _, tc := range []struct {
		name string
		repo string
		// want are the rules that must deny; secret must show nowhere.
		want   []string
		secret string
		// refused: the repository's rules do not compile, which refuses
		// the plan too (fail closed) without showing anything of the
		// operator's.
		refused bool
	}{
		{name: "none", want: []string{"org-no-evil", "org-few-changes", "org-accounts"}},
		{name: "a builtin shadowed", repo: "package main\n\nlower(_) := \"harmless\"\n\ncount(_) := 0\n", want: []string{"org-no-evil", "org-few-changes", "org-accounts"}},
		{name: "the operator's set extended", repo: "package org\n\nallowed_accounts contains \"sandbox-666\"\n", want: []string{"org-no-evil", "org-few-changes", "org-accounts"}},
		{name: "the operator's data read", repo: "package main\n\ndeny contains msg if {\n\tmsg := sprintf(\"%v\", [data.org.allowed_accounts])\n}\n", secret: "prod-4711", refused: true, want: []string{"org-no-evil", "org-few-changes", "org-accounts"}},
		{name: "the operator's data read by a package of the same name", repo: "package org\n\nspy := allowed_accounts\n", secret: "prod-4711", refused: true, want: []string{"org-no-evil", "org-few-changes", "org-accounts"}},
		{name: "the whole data tree read", repo: "package main\n\nwarn contains msg if {\n\tmsg := sprintf(\"%v\", [data])\n}\n", secret: "prod-4711", refused: true, want: []string{"org-no-evil", "org-few-changes", "org-accounts"}},
		{name: "a denial added", repo: "package main\n\ndeny contains {\"msg\": \"not on fridays\", \"rule\": \"repo-fridays\"} if { true }\n", want: []string{"org-no-evil", "org-few-changes", "org-accounts", "repo-fridays"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := PolicySource{Folder: "policy", Base: "base1", GitHub: folders{}, Operator: map[string]string{"operator/org/org.rego": operatorRule, "operator/org/data.rego": operatorData}}
			if tc.repo != "" {
				src.GitHub = folders{"base1:policy": {"repo.rego": []byte(tc.repo)}}
			}
			p := LoadPolicies(t.Context(), src)
			o := p.judge(t.Context(), nil, evil, &model.Spec{}, "apps/evil/dev")
			if o.Refused() == nil {
				t.Fatalf("the plan passed: %+v", o)
			}
			if tc.refused {
				if o.Err == "" {
					t.Errorf("the repository's rules compiled: %+v", o)
				}
			} else if o.Err != "" {
				t.Fatalf("evaluation failed: %s", o.Err)
			}
			denied := map[string]bool{}
			for _, d := range o.Denies {
				denied[d.Rule] = true
			}
			for _, r := range tc.want {
				if !denied[r] {
					t.Errorf("%s does not deny: %+v", r, o.Denies)
				}
			}
			raw, _ := json.Marshal(o)
			if tc.secret != "" && strings.Contains(string(raw), tc.secret) {
				t.Errorf("the operator's data shows in the outcome: %s", raw)
			}
		})
	}
}
