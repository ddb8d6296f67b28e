package report_test

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kusionpr/kusionpr/engine"
	"github.com/kusionpr/kusionpr/internal/mdcheck"
	"github.com/kusionpr/kusionpr/model"
	"github.com/kusionpr/kusionpr/report"
)

// update rewrites the golden files: go test ./report -run Golden -update,
// then read the diff before committing it.
var update = flag.Bool("update", false, "rewrite testdata/golden from the current output")

// hostile is markup a repository could put in any name, id, path or value:
// it closes our <details>, opens a comment that would hide the rest,
// mentions a team and loads a beacon image.
const hostile = "</details><!-- @org/team ![x](http://127.0.0.1/b)"

// hostileFolder is hostile as a folder path can hold it (no "//").
const hostileFolder = "evil/</details><!-- @org/team ![x](http:/127.0.0.1/b)"

func hostilePreview() *engine.Preview {
	create := "v1:ConfigMap:" + hostile
	update := "v1:Secret:ns:`" + hostile + "``"
	replace := "apps/v1:Deployment:ns:" + hostile
	deleted := "v1:Service:" + hostile
	failed := "hashicorp:local:file:" + hostile
	return &engine.Preview{
		Project: hostile, Workspace: "default", Stack: hostile, PriorRevision: 2,
		StepKeys: []string{create, update, replace, deleted, failed},
		ChangeSteps: map[string]*engine.Step{
			create: {ID: create, Action: engine.Create, To: &model.Resource{ID: create, Type: model.Kubernetes, Attributes: map[string]any{
				"data": map[string]any{
					"```\n" + hostile: "````\n" + hostile + "\n````",
					"note":            "@org/team ![x](http://127.0.0.1/b)",
				},
			}}},
			update: {ID: update, Action: engine.Update, Changes: []engine.FieldChange{
				{Path: "data.```\n</details>\n<!--", Op: "replace", From: "a", To: hostile + "\n```"},
				{Path: "metadata.labels.@org/team", Op: "add", To: "![x](http://127.0.0.1/b)"},
			}, Drift: []engine.FieldChange{
				{Path: "data.`` " + hostile, Op: "remove", From: hostile},
			}},
			replace: {ID: replace, Action: engine.Update, Replace: []string{"spec.selector.`" + hostile + "`", "spec.@org/team"},
				Changes: []engine.FieldChange{{Path: "spec.selector", Op: "replace", From: "a", To: "b"}}},
			deleted: {ID: deleted, Action: engine.Delete},
			failed: {ID: failed, Action: engine.Failed,
				Error: "apply " + failed + ": exit status 1\n\n" + hostile + "\n```\n<!--\n@org/team"},
		},
	}
}

func createOnlyPreview() *engine.Preview {
	ns := &model.Resource{ID: "v1:Namespace:shop", Type: model.Kubernetes, Attributes: map[string]any{
		"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "shop"}}}
	cm := &model.Resource{ID: "v1:ConfigMap:shop:cfg", Type: model.Kubernetes, Attributes: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "cfg", "namespace": "shop"}, "data": map[string]any{"mode": "one"}}}
	return &engine.Preview{Project: "shop", Workspace: "dev", Stack: "dev",
		StepKeys: []string{ns.ID, cm.ID},
		ChangeSteps: map[string]*engine.Step{
			ns.ID: {ID: ns.ID, Action: engine.Create, To: ns},
			cm.ID: {ID: cm.ID, Action: engine.Create, To: cm},
		}}
}

func driftPreview() *engine.Preview {
	web, cfg := "apps/v1:Deployment:shop:web", "v1:ConfigMap:shop:cfg"
	return &engine.Preview{Project: "shop", Workspace: "prod", Stack: "prod", PriorRevision: 7,
		StepKeys: []string{cfg, web},
		ChangeSteps: map[string]*engine.Step{
			web: {ID: web, Action: engine.Update,
				Changes: []engine.FieldChange{{Path: "spec.template.spec.containers[0].image", Op: "replace", From: "web:1.0", To: "web:1.1"}},
				Drift:   []engine.FieldChange{{Path: "spec.replicas", Op: "replace", From: 2.0, To: 5.0}}},
			cfg: {ID: cfg, Action: engine.UnChanged},
		}}
}

func replacementPreview() *engine.Preview {
	file := "hashicorp:local:local_file:motd"
	return &engine.Preview{Project: "infra", Workspace: "dev", Stack: "dev", PriorRevision: 2,
		StepKeys: []string{file},
		ChangeSteps: map[string]*engine.Step{
			file: {ID: file, Action: engine.Update, Replace: []string{"content"},
				Changes: []engine.FieldChange{{Path: "content", Op: "replace", From: "hello", To: "hello, world"}}},
		}}
}

func secretPreview() *engine.Preview {
	created := model.Redact(model.Resource{ID: "v1:Secret:shop:creds", Type: model.Kubernetes, Attributes: map[string]any{
		"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "creds", "namespace": "shop"},
		"stringData": map[string]any{"password": "hunter2-very-secret"}}})
	token := "v1:Secret:shop:token"
	return &engine.Preview{Project: "shop", Workspace: "dev", Stack: "dev", PriorRevision: 1,
		StepKeys: []string{created.ID, token},
		ChangeSteps: map[string]*engine.Step{
			created.ID: {ID: created.ID, Action: engine.Create, To: &created},
			token: {ID: token, Action: engine.Update, Changes: []engine.FieldChange{
				{Path: "data.token", Op: "replace", From: model.Fingerprint("old-token-value"), To: model.Fingerprint("new-token-value")}}},
		}}
}

// withWorkspace is p with where its workspace came from.
func withWorkspace(p *engine.Preview, workspace string, o *engine.WorkspaceOrigin) *engine.Preview {
	p.Workspace, p.WorkspaceOrigin = workspace, o
	return p
}

// storeWorkspace is a workspace the release store holds, shadowing the
// repository's file of the same name, which the pull request adds.
func storeWorkspace() *engine.WorkspaceOrigin {
	return &engine.WorkspaceOrigin{Source: engine.WorkspaceFromStore, File: "s3://kusion-state/kusion/workspaces/dev.yaml",
		Unused: "apps/shop/workspaces/dev.yaml", Edited: []string{"apps/shop/workspaces/dev.yaml"}}
}

// goldenCases are the comments whose exact Markdown is reviewed in
// testdata/golden.
func goldenCases() []struct {
	name  string
	p     *engine.Preview
	err   error
	opts  report.CommentOptions
	check mdcheck.Want
} {
	failedRelease := &model.Release{Project: hostile, Workspace: "default", Revision: 3, Phase: model.Phase(hostile),
		Spec: &model.Spec{Resources: []model.Resource{{ID: "x"}}}}
	return []struct {
		name  string
		p     *engine.Preview
		err   error
		opts  report.CommentOptions
		check mdcheck.Want
	}{
		{name: "sample", p: samplePreview(), check: mdcheck.Want{Details: 5}},
		{name: "create-only", p: createOnlyPreview(), check: mdcheck.Want{Details: 2}},
		{name: "update-with-drift", p: driftPreview(), check: mdcheck.Want{Details: 2}},
		{name: "replacement", p: replacementPreview(), check: mdcheck.Want{Details: 1}},
		{name: "secret", p: secretPreview(), check: mdcheck.Want{Details: 2}},
		{name: "failed-stack", p: &engine.Preview{Project: "shop", Stack: "dev", Workspace: "dev", ChangeSteps: map[string]*engine.Step{}},
			err: errors.New("apps/shop/dev/spec.yaml: resource 2 (v1:ConfigMap:shop:cfg): dependsOn names v1:Namespace:gone, which is not in the spec"), check: mdcheck.Want{}},
		{name: "policy", p: samplePreview(), opts: report.CommentOptions{Location: "apps/shop/dev", Policy: &report.PolicyReport{
			Source: "the operator's and policy/ at 1a2b3c4, the head of main", Changed: true,
			Denies: []report.PolicyFinding{
				{Rule: "no-public-lb", Message: "Service shop/web is of type LoadBalancer outside prod"},
				{Rule: "org-regions", Message: "Bucket shop-assets is outside the regions the organisation allows", Operator: true},
				{Rule: "main.deny", Message: "Deployment shop/web: container app has no memory limit", Overridden: true},
			},
			Warnings: []report.PolicyFinding{{Rule: "main.warn", Message: "ConfigMap shop/cfg has drifted and this change touches it"}},
		}}, check: mdcheck.Want{Details: 5}},
		{name: "policy-error", p: samplePreview(), opts: report.CommentOptions{Location: "apps/shop/dev", Policy: &report.PolicyReport{
			Source: "the operator's and policy/ at 1a2b3c4, the head of main", Err: "policy/ at 1a2b3c4, the head of main: policy/limits.rego:7: rego_unsafe_var_error: var x is unsafe",
			Denies: []report.PolicyFinding{{Rule: "org-regions", Message: "Bucket shop-assets is outside the regions the organisation allows", Operator: true}},
		}}, check: mdcheck.Want{Details: 5}},
		{name: "policy-hostile", p: samplePreview(), opts: report.CommentOptions{Location: "apps/shop/dev", Policy: &report.PolicyReport{
			Source: hostileFolder, Denies: []report.PolicyFinding{{Rule: hostile, Message: hostile + "\n```\n" + hostile}},
			Warnings: []report.PolicyFinding{{Rule: "`` " + hostile, Message: "<!-- " + hostile}},
		}}, check: mdcheck.Want{Details: 5, Data: []string{hostile, hostileFolder}}},
		{name: "hostile", p: hostilePreview(), opts: report.CommentOptions{Location: hostileFolder},
			check: mdcheck.Want{Details: 5, Data: []string{hostile, hostileFolder, "@org/team ![x](http://127.0.0.1/b)"}}},
		{name: "hostile-release", p: hostilePreview(), opts: report.CommentOptions{Location: hostileFolder, Release: failedRelease},
			check: mdcheck.Want{Details: 5, Data: []string{hostile, hostileFolder}}},
		{name: "workspace-store", p: withWorkspace(createOnlyPreview(), "dev", storeWorkspace()), check: mdcheck.Want{Details: 2}},
		{name: "workspace-default", p: withWorkspace(createOnlyPreview(), "default", &engine.WorkspaceOrigin{Source: engine.WorkspaceFromDefault,
			StoreHasStack: "dev", ContextDiffers: []string{"AWS_REGION", "KUBECONFIG_PATH"}}), check: mdcheck.Want{Details: 2}},
		{name: "workspace-repository", p: withWorkspace(createOnlyPreview(), "dev", &engine.WorkspaceOrigin{Source: engine.WorkspaceFromRepository,
			File: "apps/shop/workspaces/dev.yaml", Edited: []string{"apps/shop/workspaces/dev.yaml"}}), check: mdcheck.Want{Details: 2}},
		{name: "workspace-hostile", p: withWorkspace(hostilePreview(), hostile, &engine.WorkspaceOrigin{Source: engine.WorkspaceFromRepository,
			File: hostileFolder, Unused: hostileFolder, Edited: []string{hostileFolder, hostileFolder + "2"}, StoreHasStack: hostile, ContextDiffers: []string{hostile}}),
			check: mdcheck.Want{Details: 5, Data: []string{hostile, hostileFolder}}},
		{name: "hostile-stack-error", p: &engine.Preview{Project: hostile, Stack: hostile, Workspace: "default", ChangeSteps: map[string]*engine.Step{}},
			err:   errors.New("stacks/" + hostile + "/spec.yaml: resource 2: unknown type \"" + hostile + "\""),
			check: mdcheck.Want{Details: 0, Data: []string{hostile, "unknown type \"" + hostile + "\""}}},
	}
}

// golden compares got with testdata/golden/name, which -update rewrites.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to write it)", err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s (run with -update and review the diff):\n%s", path, got)
	}
}

// TestCommentGolden: the comments are exactly as reviewed, and GitHub
// renders every value in them as text: no element, comment, link, image
// or mention of the repository's.
func TestCommentGolden(t *testing.T) {
	r, err := report.New()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range goldenCases() {
		t.Run(tc.name, func(t *testing.T) {
			got, err := r.Comment(tc.p, tc.err, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			golden(t, tc.name+".md", got)
			for _, secret := range []string{"hunter2-very-secret", "old-token-value", "new-token-value", "tok-123456"} {
				if strings.Contains(got, secret) {
					t.Errorf("the comment shows the secret value %q", secret)
				}
			}
			for _, p := range mdcheck.Check(got, tc.check) {
				t.Error(p)
			}
		})
	}
}

// TestHostileCommentSplits: cut into many parts, the hostile comment stays
// inert in each part, and the splitter, which follows <details> across
// parts, is not fooled by "</details>" in the values.
func TestHostileCommentSplits(t *testing.T) {
	r, _ := report.New()
	p := hostilePreview()
	// Many steps, so the comment needs several parts.
	for i := range 40 {
		id := strings.Repeat("x", i) + ":" + hostile
		p.StepKeys = append(p.StepKeys, id)
		p.ChangeSteps[id] = &engine.Step{ID: id, Action: engine.Update, Changes: []engine.FieldChange{
			{Path: "data.`" + hostile, Op: "replace", From: hostile, To: strings.Repeat("y", 200)},
		}}
	}
	body, err := r.Comment(p, nil, report.CommentOptions{Location: hostileFolder})
	if err != nil {
		t.Fatal(err)
	}
	opts := report.SplitOptions{Limit: 3000, MaxParts: 50, Header: header, Footer: footer}
	parts := report.Split(body, opts)
	if len(parts) < 5 {
		t.Fatalf("%d parts, want the comment split", len(parts))
	}
	for i, part := range parts {
		// Our own <details> lines, opened and reopened, are what GitHub
		// must render as elements, no more.
		own := 0
		if err := walk(part, func(line, role string) {
			if role == "text" && strings.HasPrefix(line, "<details>") {
				own++
			}
		}); err != nil {
			t.Errorf("part %d: %v", i+1, err)
		}
		for _, problem := range mdcheck.Check(part, mdcheck.Want{Details: own}) {
			t.Errorf("part %d: %s\n%s", i+1, problem, part)
		}
	}
}

// TestSplitGolden: a preview too long for one comment, cut as the
// action cuts it, part by part as reviewed.
func TestSplitGolden(t *testing.T) {
	r, _ := report.New()
	p := createOnlyPreview()
	for i := range 30 {
		id := fmt.Sprintf("v1:ConfigMap:shop:cfg-%02d", i)
		p.StepKeys = append(p.StepKeys, id)
		p.ChangeSteps[id] = &engine.Step{ID: id, Action: engine.Create, To: &model.Resource{ID: id, Type: model.Kubernetes, Attributes: map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": fmt.Sprintf("cfg-%02d", i), "namespace": "shop"},
			"data": map[string]any{"blob": strings.Repeat(fmt.Sprintf("line %02d of a long value\n", i), 12)}}}}
	}
	body, err := r.Comment(p, nil, report.CommentOptions{Marker: "<!-- kusionpr:preview stack=apps/shop/dev workspace=dev -->", Location: "apps/shop/dev"})
	if err != nil {
		t.Fatal(err)
	}
	parts := report.Split(body, report.SplitOptions{Limit: 6000, MaxParts: 3,
		Header: func(i, n int) string {
			return fmt.Sprintf("<!-- kusionpr:preview stack=apps/shop/dev workspace=dev part=%d -->\n*continued (%d of %d)*\n", i, i, n)
		},
		Footer:    func(i, n int) string { return fmt.Sprintf("\n\n*Continued in the next comment (%d of %d).*", i+1, n) },
		Truncated: "\n\n> [!NOTE]\n> This preview is too long for comments: the rest is in the workflow run's job summary.",
	})
	if len(parts) != 3 {
		t.Fatalf("%d parts, want 3 (the cap)", len(parts))
	}
	for i, part := range parts {
		golden(t, fmt.Sprintf("split-%d.md", i+1), part)
		for _, p := range mdcheck.Check(part, mdcheck.Want{Details: strings.Count(part, "<details>")}) {
			t.Errorf("part %d: %s", i+1, p)
		}
	}
}

// TestWorkspaceTextGolden: the terminal's preview says which workspace,
// where from, and what a reader must know of it, as reviewed.
func TestWorkspaceTextGolden(t *testing.T) {
	r, err := report.New()
	if err != nil {
		t.Fatal(err)
	}
	for name, p := range map[string]*engine.Preview{
		"workspace-store.txt": withWorkspace(createOnlyPreview(), "dev", storeWorkspace()),
		"workspace-default.txt": withWorkspace(createOnlyPreview(), "default", &engine.WorkspaceOrigin{Source: engine.WorkspaceFromDefault,
			StoreHasStack: "dev", ContextDiffers: []string{"AWS_REGION", "KUBECONFIG_PATH"}}),
		"workspace-none.txt": withWorkspace(createOnlyPreview(), "staging", &engine.WorkspaceOrigin{Source: engine.WorkspaceFromNowhere}),
	} {
		t.Run(name, func(t *testing.T) {
			var b strings.Builder
			if err := r.Render(&b, report.Text, p, nil); err != nil {
				t.Fatal(err)
			}
			golden(t, name, b.String())
		})
	}
}
