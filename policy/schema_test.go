package policy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/open-policy-agent/opa/v1/rego"

	"github.com/kusionpr/kusionpr/engine"
	"github.com/kusionpr/kusionpr/model"
	"github.com/kusionpr/kusionpr/policy"
)

// TestSchemaDocumented: the schema rules are checked against is the one
// docs/ publishes.
func TestSchemaDocumented(t *testing.T) {
	enforced, err := os.ReadFile("input.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	documented, err := os.ReadFile("../docs/policy-input.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(enforced, documented) {
		t.Fatal("policy/input.schema.json and docs/policy-input.schema.json differ: copy one onto the other")
	}
}

// TestInputMatchesSchema: the document rules get, for a preview with every
// kind of step, a spec and a pull request, is what the schema describes.
func TestInputMatchesSchema(t *testing.T) {
	secret := model.Resource{ID: "v1:Secret:shop:db", Type: model.Kubernetes, Attributes: map[string]any{
		"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "db", "namespace": "shop"},
		"stringData": map[string]any{"password": "hunter2-db-password"}}}
	public := model.Public(secret)
	dep := k8s("apps/v1", "Deployment", "shop", "web", containers(limited))
	old := k8s("apps/v1", "Deployment", "shop", "web", containers(limited))
	pvc := k8s("v1", "PersistentVolumeClaim", "shop", "data", nil)
	cm := k8s("v1", "ConfigMap", "shop", "conf", map[string]any{"data": map[string]any{"a": "b"}})
	update := step(engine.Update, old, dep)
	update.Changes = []engine.FieldChange{{Path: "spec.replicas", Op: "replace", From: 1, To: 2}}
	update.SpecChanges = update.Changes
	update.Drift = []engine.FieldChange{{Path: "metadata.labels.team", Op: "add", To: "x"}}
	update.Replace = []string{"spec.selector"}
	del := step(engine.Delete, pvc, nil)
	del.Drift = []engine.FieldChange{{Path: ".", Op: "remove", From: "exists in release 3"}}
	p := preview(step(engine.Create, nil, &public), update, del, &engine.Step{ID: "hashicorp:aws:aws_s3_bucket:b", Action: engine.Failed, Error: "no credentials"},
		step(engine.UnChanged, cm, cm))
	p.PriorRevision = 3
	in := policy.Input{
		Preview: p, Project: "shop", Stack: "dev", Dir: "apps/shop/dev", Workspace: "dev",
		Spec: &model.Spec{Resources: model.Resources{secret, *dep, {ID: "hashicorp:aws:aws_s3_bucket:b", Type: model.Terraform,
			Attributes: map[string]any{"bucket": "b"}, DependsOn: []string{"v1:Secret:shop:db"},
			Extensions: map[string]any{"provider": "registry.terraform.io/hashicorp/aws/5.0.1", "resourceType": "aws_s3_bucket"}}}},
		PullRequest: &policy.PullRequest{Number: 7, Author: "octocat", Base: strings.Repeat("a", 40), Head: strings.Repeat("b", 40)},
	}
	for _, tc := range []struct {
		name string
		in   policy.Input
	}{
		{"a pull request's", in},
		{"a push's (no pull request)", policy.Input{Preview: preview(), Spec: &model.Spec{}, Project: "p", Stack: "s", Dir: "s", Workspace: "w"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc, err := tc.in.JSON()
			if err != nil {
				t.Fatal(err)
			}
			schema, err := os.ReadFile("input.schema.json")
			if err != nil {
				t.Fatal(err)
			}
			var d, s any
			if err := json.Unmarshal(doc, &d); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(schema, &s); err != nil {
				t.Fatal(err)
			}
			rs, err := rego.New(rego.Query("r := json.match_schema(input.doc, input.schema)"),
				rego.Input(map[string]any{"doc": d, "schema": s})).Eval(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			r := rs[0].Bindings["r"].([]any)
			if r[0] != true {
				t.Fatalf("the input does not match the schema: %v\n%s", r[1], doc)
			}
		})
	}
}

// TestInputTypos: a rule naming a field the input does not have is refused
// at Load, as it would never match.
func TestInputTypos(t *testing.T) {
	for _, tc := range []struct{ name, src, want string }{
		{"top level", "package main\n\ndeny contains \"x\" if input.workspce == \"dev\"\n", "p.rego:3: rego_type_error: undefined ref: input.workspce"},
		{"in the pull request", "package main\n\ndeny contains \"x\" if input.pullRequest.user == \"bot\"\n", "p.rego:3: rego_type_error: undefined ref: input.pullRequest.user"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := policy.Load(context.Background(), fstest.MapFS{"p.rego": {Data: []byte(tc.src)}}, policy.Options{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Load: %v, want an error saying %q", err, tc.want)
			}
		})
	}
}

// TestDocumentedRules: the rules docs/policy.md shows compile as they are.
func TestDocumentedRules(t *testing.T) {
	doc, err := os.ReadFile("../docs/policy.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := strings.Split(string(doc), "```rego\n")[1:]
	if len(blocks) < 3 {
		t.Fatalf("%d Rego blocks in docs/policy.md", len(blocks))
	}
	for i, b := range blocks {
		src, _, _ := strings.Cut(b, "```")
		if strings.Contains(src, "test_") {
			continue // a unit test, needing the examples' helpers
		}
		s, err := policy.Load(context.Background(), fstest.MapFS{"doc.rego": {Data: []byte(src)}}, policy.Options{})
		if err != nil {
			t.Errorf("block %d: %v\n%s", i+1, err, src)
			continue
		}
		if s.Empty() {
			t.Errorf("block %d defines no rule that counts", i+1)
		}
	}
}
