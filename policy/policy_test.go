package policy_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"github.com/kusionpr/kusionpr/engine"
	"github.com/kusionpr/kusionpr/model"
	"github.com/kusionpr/kusionpr/policy"
)

func examples(t *testing.T) *policy.Set {
	t.Helper()
	s, err := policy.Load(context.Background(), os.DirFS("../examples/policy"), policy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func k8s(apiVersion, kind, ns, name string, attrs map[string]any) *model.Resource {
	a := map[string]any{"apiVersion": apiVersion, "kind": kind, "metadata": map[string]any{"name": name, "namespace": ns}}
	for k, v := range attrs {
		a[k] = v
	}
	return &model.Resource{ID: apiVersion + ":" + kind + ":" + ns + ":" + name, Type: model.Kubernetes, Attributes: a}
}

func preview(steps ...*engine.Step) *engine.Preview {
	p := &engine.Preview{Project: "shop", Workspace: "dev", Stack: "dev", ChangeSteps: map[string]*engine.Step{}}
	for _, st := range steps {
		p.StepKeys = append(p.StepKeys, st.ID)
		p.ChangeSteps[st.ID] = st
	}
	return p
}

func step(action engine.Action, from, to *model.Resource) *engine.Step {
	st := &engine.Step{Action: action, From: from, To: to}
	if to != nil {
		st.ID = to.ID
	} else {
		st.ID = from.ID
	}
	return st
}

func containers(cs ...map[string]any) map[string]any {
	list := make([]any, len(cs))
	for i, c := range cs {
		list[i] = c
	}
	return map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"containers": list}}}}
}

var limited = map[string]any{"name": "web", "resources": map[string]any{"limits": map[string]any{"cpu": "1", "memory": "1Gi"}}}

func ids(fs []policy.Finding) []string {
	out := []string{}
	for _, f := range fs {
		out = append(out, f.Rule)
	}
	sort.Strings(out)
	return out
}

func TestEvalExamples(t *testing.T) {
	s := examples(t)
	if s.Empty() {
		t.Fatal("Empty() on the examples")
	}
	if got, want := s.Files(), []string{"drift.rego", "limits.rego", "loadbalancer.rego", "providers.rego", "pvc.rego"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Files() = %v, want %v (tests left out)", got, want)
	}
	lb := k8s("v1", "Service", "shop", "web", map[string]any{"spec": map[string]any{"type": "LoadBalancer"}})
	pvc := k8s("v1", "PersistentVolumeClaim", "shop", "data", nil)
	pvcAllowed := k8s("v1", "PersistentVolumeClaim", "shop", "data", nil)
	pvcAllowed.Attributes["metadata"].(map[string]any)["annotations"] = map[string]any{"kusion.io/allow-delete": "true"}
	tf := func(provider string) model.Resource {
		return model.Resource{ID: "hashicorp:aws:aws_s3_bucket:logs", Type: model.Terraform, Attributes: map[string]any{"bucket": "logs"},
			Extensions: map[string]any{"provider": provider}}
	}
	drifted := step(engine.Update, nil, k8s("apps/v1", "Deployment", "shop", "web", containers(limited)))
	drifted.Drift = []engine.FieldChange{{Path: "spec.replicas", Op: "replace", From: 2, To: 5}}

	for _, tc := range []struct {
		name      string
		in        policy.Input
		denies    []string
		warnings  []string
		inMessage string
	}{
		{name: "nothing to say", in: policy.Input{Workspace: "dev", Preview: preview()}},
		{name: "load balancer in dev", in: policy.Input{Workspace: "dev", Preview: preview(step(engine.Create, nil, lb))},
			denies: []string{"no-loadbalancer-outside-prod"}, inMessage: "v1:Service:shop:web: a Service of type LoadBalancer is allowed in workspace prod only, not in dev"},
		{name: "load balancer in prod", in: policy.Input{Workspace: "prod", Preview: preview(step(engine.Create, nil, lb))}},
		{name: "container without limits", in: policy.Input{Workspace: "dev", Preview: preview(step(engine.Create, nil,
			k8s("apps/v1", "Deployment", "shop", "web", containers(limited, map[string]any{"name": "sidecar"}))))},
			denies: []string{"container-limits"}, inMessage: "container sidecar has no cpu or memory limit"},
		{name: "claim deleted without the annotation", in: policy.Input{Workspace: "dev", Preview: preview(step(engine.Delete, pvc, nil))},
			denies: []string{"pvc-deletion"}},
		{name: "claim deleted with the annotation", in: policy.Input{Workspace: "dev", Preview: preview(step(engine.Delete, pvcAllowed, nil))}},
		{name: "provider not allowed", in: policy.Input{Workspace: "dev", Preview: preview(),
			Spec: &model.Spec{Resources: model.Resources{tf("registry.terraform.io/acme/aws/1.0.0")}}},
			denies: []string{"terraform-providers"}, inMessage: "provider registry.terraform.io/acme/aws is not in the allowed list"},
		{name: "provider allowed", in: policy.Input{Workspace: "dev", Preview: preview(),
			Spec: &model.Spec{Resources: model.Resources{tf("registry.terraform.io/hashicorp/aws/5.0.1")}}}},
		{name: "update over drift", in: policy.Input{Workspace: "dev", Preview: preview(drifted)},
			warnings: []string{"main.warn"}, inMessage: "overwrites changes made outside a release: spec.replicas"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := s.Eval(context.Background(), tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if got := ids(res.Denies); !reflect.DeepEqual(got, append([]string{}, tc.denies...)) {
				t.Errorf("denies %v, want %v: %+v", got, tc.denies, res.Denies)
			}
			if got := ids(res.Warnings); !reflect.DeepEqual(got, append([]string{}, tc.warnings...)) {
				t.Errorf("warnings %v, want %v: %+v", got, tc.warnings, res.Warnings)
			}
			if tc.inMessage != "" {
				found := false
				for _, f := range append(res.Denies, res.Warnings...) {
					found = found || strings.Contains(f.Message, tc.inMessage)
				}
				if !found {
					t.Errorf("no message holds %q: %+v", tc.inMessage, res)
				}
			}
		})
	}
}

// TestMessageShapes: conftest's shapes, and the rule id overrides name.
func TestMessageShapes(t *testing.T) {
	fsys := fstest.MapFS{"p.rego": {Data: []byte(`package main

deny contains "a plain string"

deny_objects contains {"msg": "with an id", "id": "ID-1", "severity": "high"}

deny_objects contains {"msg": "with a rule", "rule": "my-rule"}

violation contains {"msg": "a violation", "resource": "x"}

warn_odd contains 42

warn contains {"no": "msg"}
`)}}
	s, err := policy.Load(context.Background(), fsys, policy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Eval(context.Background(), policy.Input{})
	if err != nil {
		t.Fatal(err)
	}
	want := policy.Result{
		Denies: []policy.Finding{
			{Rule: "ID-1", Message: "with an id", Package: "main", Kind: "deny", Details: map[string]any{"severity": "high"}},
			{Rule: "main.deny", Message: "a plain string", Package: "main", Kind: "deny"},
			{Rule: "main.violation", Message: "a violation", Package: "main", Kind: "violation", Details: map[string]any{"resource": "x"}},
			{Rule: "my-rule", Message: "with a rule", Package: "main", Kind: "deny"},
		},
		Warnings: []policy.Finding{
			{Rule: "main.warn", Message: `{"no":"msg"}`, Package: "main", Kind: "warn", Details: map[string]any{"no": "msg"}},
			{Rule: "main.warn_odd", Message: "42", Package: "main", Kind: "warn"},
		},
	}
	if !reflect.DeepEqual(res, want) {
		t.Errorf("got\n%+v\nwant\n%+v", res, want)
	}
}

func TestPackages(t *testing.T) {
	fsys := fstest.MapFS{
		"a/main.rego":   {Data: []byte("package main\n\ndeny contains \"from main\"\n")},
		"b/k8s.rego":    {Data: []byte("package platform.k8s\n\ndeny contains \"from platform.k8s\"\n")},
		"c/helper.rego": {Data: []byte("package lib\n\nis_prod if input.workspace == \"prod\"\n")},
	}
	for _, tc := range []struct {
		packages []string
		want     []string
		empty    bool
	}{
		{packages: nil, want: []string{"from main"}},
		{packages: []string{"platform.k8s"}, want: []string{"from platform.k8s"}},
		{packages: []string{"main", "platform.k8s"}, want: []string{"from main", "from platform.k8s"}},
		{packages: []string{"lib"}, want: []string{}, empty: true},
		{packages: []string{"absent"}, want: []string{}, empty: true},
	} {
		t.Run(strings.Join(tc.packages, ","), func(t *testing.T) {
			s, err := policy.Load(context.Background(), fsys, policy.Options{Packages: tc.packages})
			if err != nil {
				t.Fatal(err)
			}
			if s.Empty() != tc.empty {
				t.Errorf("Empty() = %v", s.Empty())
			}
			res, err := s.Eval(context.Background(), policy.Input{})
			if err != nil {
				t.Fatal(err)
			}
			got := []string{}
			for _, f := range res.Denies {
				got = append(got, f.Message)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("denies %v, want %v", got, tc.want)
			}
		})
	}
}

// TestBrokenPoliciesFailClosed: every way a policy can be broken is an
// error naming the file and line, at Load or at Eval, never a pass.
func TestBrokenPoliciesFailClosed(t *testing.T) {
	var requests atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		w.Write([]byte(`{"allowed": true}`))
	}))
	defer srv.Close()

	for _, tc := range []struct {
		name    string
		src     string
		atEval  bool
		timeout time.Duration
		want    []string
	}{
		{name: "parse error", src: "package main\n\ndeny contains msg if {\n\tmsg := \n}\n",
			want: []string{"rules/broken.rego:5", "rego_parse_error"}},
		{name: "v0 syntax without the keywords", src: "package main\n\ndeny[msg] {\n\tmsg := \"x\"\n}\n",
			want: []string{"rules/broken.rego:3", "rego_parse_error"}},
		{name: "undefined function", src: "package main\n\ndeny contains msg if {\n\tmsg := no_such_helper(input)\n}\n",
			want: []string{"rules/broken.rego:4", "undefined function no_such_helper"}},
		{name: "undefined reference into data", src: "package main\n\nimport data.lib\n\ndeny contains \"lb\" if {\n\tlib.is_prodd\n}\n",
			want: []string{"rules/broken.rego:6", "undefined reference: data.lib"}},
		{name: "typo in a rule of the package", src: "package main\n\nis_dev if input.workspace == \"dev\"\n\ndeny contains \"dev\" if {\n\tdata.main.is_dve\n}\n",
			want: []string{"rules/broken.rego:6", "undefined reference: data.main.is_dve"}},
		{name: "unused variable (strict)", src: "package main\n\ndeny contains \"x\" if {\n\tunused := input.workspace\n\ttrue\n}\n",
			want: []string{"rules/broken.rego:4", "assigned var unused unused"}},
		{name: "http.send", src: "package main\n\ndeny contains msg if {\n\tresp := http.send({\"method\": \"GET\", \"url\": \"" + srv.URL + "\"})\n\tmsg := resp.raw_body\n}\n",
			want: []string{"rules/broken.rego:4", "undefined function http.send"}},
		{name: "net.lookup_ip_addr", src: "package main\n\ndeny contains msg if {\n\taddrs := net.lookup_ip_addr(\"localhost\")\n\tmsg := sprintf(\"%v\", [addrs])\n}\n",
			want: []string{"rules/broken.rego:4", "undefined function net.lookup_ip_addr"}},
		{name: "opa.runtime (the environment)", src: "package main\n\ndeny contains msg if {\n\tmsg := opa.runtime().env.HOME\n}\n",
			want: []string{"rules/broken.rego:4", "undefined function opa.runtime"}},
		{name: "conflicting outputs", atEval: true, src: "package main\n\nlevel := 1 if input.workspace == \"dev\"\n\nlevel := 2 if input.stack == \"dev\"\n\ndeny contains \"x\" if level > 1\n",
			want: []string{"rules/broken.rego:", "eval_conflict_error", "policy rule main.deny"}},
		{name: "builtin error", atEval: true, src: "package main\n\ndeny contains msg if {\n\tn := to_number(input.workspace)\n\tmsg := sprintf(\"%v\", [n])\n}\n",
			want: []string{"rules/broken.rego:4", "to_number"}},
		{name: "past the timeout", atEval: true, timeout: 50 * time.Millisecond,
			src:  "package main\n\ndeny contains \"never\" if {\n\tsome a in numbers.range(1, 100000)\n\tsome b in numbers.range(1, 100000)\n\ta == b + 1000000\n}\n",
			want: []string{"policy rule main.deny (rules/broken.rego:3)", "exceeded the timeout of 50ms"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fsys := fstest.MapFS{"rules/broken.rego": {Data: []byte(tc.src)}}
			s, err := policy.Load(context.Background(), fsys, policy.Options{Timeout: tc.timeout})
			if !tc.atEval {
				if err == nil {
					t.Fatal("Load accepted the policy")
				}
				for _, w := range tc.want {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("Load's error %q does not say %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			res, err := s.Eval(context.Background(), policy.Input{Workspace: "dev", Stack: "dev"})
			if err == nil {
				t.Fatalf("Eval passed: %+v", res)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Eval's error %q does not say %q", err, w)
				}
			}
		})
	}
	if n := requests.Load(); n != 0 {
		t.Errorf("the local server got %d requests from a policy", n)
	}
}

func TestSymlinkRefused(t *testing.T) {
	dir := t.TempDir()
	outside := filepath.Join(t.TempDir(), "credentials")
	if err := os.WriteFile(outside, []byte("package main\n\ndeny contains \"secret-token-value\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "creds.rego")); err != nil {
		t.Fatal(err)
	}
	_, err := policy.Load(context.Background(), os.DirFS(dir), policy.Options{})
	if err == nil || !strings.Contains(err.Error(), "creds.rego: not a regular file") {
		t.Fatalf("Load of a folder with a symbolic link: %v", err)
	}
}

// TestSecretsNeverReachRules: a rule that prints every value it can find
// prints the mask, never a Secret's value or a Terraform sensitive value.
func TestSecretsNeverReachRules(t *testing.T) {
	const secret = "hunter2-db-password"
	const tfSecret = "tf-sensitive-token"
	raw := model.Resource{ID: "v1:Secret:shop:db", Type: model.Kubernetes, Attributes: map[string]any{
		"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "db", "namespace": "shop"},
		"stringData": map[string]any{"password": secret},
	}}
	public := model.Public(raw) // as the engine puts it in a preview
	tfPlanned := model.Public(model.WithSensitivePaths(model.Resource{ID: "hashicorp:aws:aws_db_instance:db", Type: model.Terraform,
		Attributes: map[string]any{"password": tfSecret, "engine": "postgres"}}, []string{"password"}))
	in := policy.Input{
		Workspace: "dev",
		Preview:   preview(step(engine.Create, nil, &public), step(engine.Create, nil, &tfPlanned), &engine.Step{ID: "hashicorp:aws:aws_iam_user:u", Action: engine.Failed, Error: "no credentials"}),
		Spec: &model.Spec{
			Resources: model.Resources{raw,
				{ID: "hashicorp:aws:aws_db_instance:db", Type: model.Terraform, Attributes: map[string]any{"password": tfSecret, "engine": "postgres"}},
				{ID: "hashicorp:aws:aws_iam_user:u", Type: model.Terraform, Attributes: map[string]any{"secret_key": tfSecret}},
			},
			Context:     map[string]any{"kubeconfig": "token: " + secret},
			SecretStore: map[string]any{"token": secret},
		},
	}
	fsys := fstest.MapFS{"leak.rego": {Data: []byte(`package main

deny contains msg if {
	some step in input.preview.changeSteps
	msg := sprintf("preview %s", [json.marshal(step)])
}

deny contains msg if {
	some r in input.spec.resources
	msg := sprintf("spec %s", [json.marshal(r)])
}

deny contains sprintf("whole %s", [json.marshal(input)])
`)}}
	s, err := policy.Load(context.Background(), fsys, policy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Eval(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	var all strings.Builder
	for _, f := range res.Denies {
		all.WriteString(f.Message + "\n")
	}
	text := all.String()
	for _, leak := range []string{secret, tfSecret, "sha256:"} {
		if strings.Contains(text, leak) {
			t.Errorf("a rule's message holds %q:\n%s", leak, text)
		}
	}
	for _, want := range []string{
		`"stringData":{"password":"(sensitive)"}`, // the preview's and the spec's Secret
		`"password":"(sensitive)"`,                // the Terraform resource, sensitive by its schema
		`"engine":"postgres"`,                     // what is not sensitive stays readable
		`"secret_key":"(sensitive)"`,              // a Terraform resource whose preview failed
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the messages do not hold %s:\n%s", want, text)
		}
	}
	if strings.Contains(text, "kubeconfig") || strings.Contains(text, "secretStore") {
		t.Errorf("the spec's context or secret store reached the rules:\n%s", text)
	}
}

// TestConcurrentEval: one Set judges many stacks at once (run with -race).
func TestConcurrentEval(t *testing.T) {
	s := examples(t)
	lb := k8s("v1", "Service", "shop", "web", map[string]any{"spec": map[string]any{"type": "LoadBalancer"}})
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			ws := "dev"
			want := 1
			if i%2 == 0 {
				ws, want = "prod", 0
			}
			res, err := s.Eval(context.Background(), policy.Input{Workspace: ws, Preview: preview(step(engine.Create, nil, lb))})
			if err != nil {
				t.Error(err)
				return
			}
			if len(res.Denies) != want {
				t.Errorf("workspace %s: %d denies, want %d", ws, len(res.Denies), want)
			}
		})
	}
	wg.Wait()
}

func TestUnitTests(t *testing.T) {
	t.Run("examples", func(t *testing.T) {
		rep, err := policy.Test(context.Background(), os.DirFS("../examples/policy"))
		if err != nil {
			t.Fatal(err)
		}
		if rep.Failed+rep.Errored > 0 || rep.Passed < 20 {
			t.Fatalf("examples: %+v", rep)
		}
		for _, r := range rep.Results {
			if r.Package != "main" || !strings.HasPrefix(r.Name, "test_") || !strings.Contains(r.Location, "_test.rego:") {
				t.Errorf("result %+v", r)
			}
		}
	})
	t.Run("failing, erroring and skipped tests", func(t *testing.T) {
		fsys := fstest.MapFS{
			"p.rego": {Data: []byte("package main\n\ndeny contains \"lb\" if input.workspace == \"dev\"\n")},
			"p_test.rego": {Data: []byte(`package main

test_dev_denied if {
	deny["lb"] with input as {"workspace": "dev"}
}

test_prod_denied_wrongly if {
	deny["lb"] with input as {"workspace": "prod"}
}

test_errors if {
	to_number("x") == 1
}

todo_test_later if {
	false
}
`)},
		}
		rep, err := policy.Test(context.Background(), fsys)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Passed != 1 || rep.Failed != 1 || rep.Errored != 1 || rep.Skipped != 1 {
			t.Fatalf("report %+v", rep)
		}
		byName := map[string]policy.TestResult{}
		for _, r := range rep.Results {
			byName[r.Name] = r
		}
		if r := byName["test_prod_denied_wrongly"]; r.Status != policy.StatusFail || r.Location != "p_test.rego:7" {
			t.Errorf("failing test: %+v", r)
		}
		if r := byName["test_errors"]; r.Status != policy.StatusError || !strings.Contains(r.Message, "p_test.rego:12") || !strings.Contains(r.Message, "to_number") {
			t.Errorf("erroring test: %+v", r)
		}
	})
	t.Run("tests of a policy Load refuses", func(t *testing.T) {
		fsys := fstest.MapFS{
			"p.rego":      {Data: []byte("package main\n\ndeny contains \"x\" if data.lib.missing\n")},
			"p_test.rego": {Data: []byte("package main\n\ntest_nothing if true\n")},
		}
		_, err := policy.Test(context.Background(), fsys)
		if err == nil || !strings.Contains(err.Error(), "p.rego:3") {
			t.Fatalf("Test of a policy with an undefined reference: %v", err)
		}
	})
	t.Run("parse error in a test file", func(t *testing.T) {
		fsys := fstest.MapFS{"p_test.rego": {Data: []byte("package main\n\ntest_x if {\n")}}
		_, err := policy.Test(context.Background(), fsys)
		if err == nil || !strings.Contains(err.Error(), "p_test.rego:") {
			t.Fatalf("Test of a file that does not parse: %v", err)
		}
	})
}

// TestRegoVersions: v1 files, and v0 files written to be v1-compatible
// (import rego.v1, or the future keywords), load as OPA v1 loads them.
func TestRegoVersions(t *testing.T) {
	for _, tc := range []struct{ name, src string }{
		{"v1", "package main\n\ndeny contains \"x\" if input.workspace == \"dev\"\n"},
		{"v0 with import rego.v1", "package main\n\nimport rego.v1\n\ndeny contains \"x\" if input.workspace == \"dev\"\n"},
		{"v0 with the future keywords", "package main\n\nimport future.keywords.contains\nimport future.keywords.if\n\ndeny contains \"x\" if input.workspace == \"dev\"\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := policy.Load(context.Background(), fstest.MapFS{"p.rego": {Data: []byte(tc.src)}}, policy.Options{})
			if err != nil {
				t.Fatal(err)
			}
			res, err := s.Eval(context.Background(), policy.Input{Workspace: "dev"})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Denies) != 1 || res.Denies[0].Message != "x" {
				t.Fatalf("denies %+v", res.Denies)
			}
		})
	}
}

func TestFolderBounds(t *testing.T) {
	big := "package main\n\n# " + strings.Repeat("x", 1<<20) + "\n"
	_, err := policy.Load(context.Background(), fstest.MapFS{"big.rego": {Data: []byte(big)}}, policy.Options{})
	if err == nil || !strings.Contains(err.Error(), "big.rego: larger than 1048576 bytes") {
		t.Fatalf("Load of a 1 MiB file: %v", err)
	}
	many := fstest.MapFS{}
	for i := range 1001 {
		many[fmt.Sprintf("p%04d.rego", i)] = &fstest.MapFile{Data: []byte("package main\n")}
	}
	_, err = policy.Load(context.Background(), many, policy.Options{})
	if err == nil || !strings.Contains(err.Error(), "more than 1000 .rego files") {
		t.Fatalf("Load of 1,001 files: %v", err)
	}
}
