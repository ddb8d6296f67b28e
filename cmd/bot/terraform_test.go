package main

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/kusionpr/kusionpr/internal/githubfake"
	"github.com/kusionpr/kusionpr/internal/testenv"
)

// TestTerraformGetsNoneOfTheBotsSecrets: a pull request adds a Terraform
// resource whose attribute reads /proc/self/environ through a template, and
// anyone comments /kusion preview (no permission needed), then it is
// merged. The preview comment and the release show the template as text;
// terraform, run by the bot, never had the App key, the webhook secret or
// the release store's credentials in its environment, and had the variable
// the operator named in KUSIONPR_TERRAFORM_ENV.
func TestTerraformGetsNoneOfTheBotsSecrets(t *testing.T) {
	bin := testenv.TerraformBinaries(t)[0]
	rec := testenv.RecordTerraform(t, bin)
	const operatorVariable, operatorValue = "KUSIONPR_TEST_OPERATOR_REGION", "operator-allowed-eu-west-9"
	const readEnviron = `${file("/proc/self/environ")}`
	var appKey string
	w := newWorld(t,
		withResources(`# beside the objects of namespace %[1]s
- id: hashicorp:terraform:terraform_data:environ
  type: Terraform
  attributes: {input: '`+readEnviron+`'}
  extensions: {provider: terraform.io/builtin/terraform, resourceType: terraform_data}
`),
		withEnv("PATH="+rec.Dir+string(os.PathListSeparator)+os.Getenv("PATH"), "XDG_CACHE_HOME="+t.TempDir(),
			"KUSIONPR_TERRAFORM_ENV=KUSIONPR_TEST_OPERATOR_*", operatorVariable+"="+operatorValue),
		// The App's key given as the variable itself, as many deployments do.
		func(w *world) {
			for _, kv := range w.env {
				if path, ok := strings.CutPrefix(kv, "KUSIONPR_APP_PRIVATE_KEY_PATH="); ok {
					b, err := os.ReadFile(path)
					if err != nil {
						t.Fatal(err)
					}
					appKey = string(b)
				}
			}
			w.env = append(w.env, "KUSIONPR_APP_PRIVATE_KEY="+appKey)
		},
	)
	keyBody := strings.Split(strings.TrimSpace(appKey), "\n")[1] // a line of the key's base64
	secrets := map[string]string{
		"the webhook secret":           secret,
		"the App's private key":        keyBody,
		"the store's secret key":       os.Getenv("AWS_SECRET_ACCESS_KEY"),
		"an environment's PATH":        "PATH=",
		"the operator's variable":      operatorValue,
		"the bot's environment itself": "KUSIONPR_APP_PRIVATE_KEY_PATH=",
	}
	const number, head, merge = 51, "5555555555555555555555555555555555555555", "6666666666666666666666666666666666666666"
	w.pullRequest(number, head)

	githubfake.Deliver(t, w.url+"/webhook", secret, "issue_comment", w.prComment(number, "stranger", "/kusion preview"))
	w.waitFor("the preview", func() bool { return w.commentsContaining(number, "Preview of stack") == 1 })
	if w.commentsContaining(number, "proc/self/environ") != 1 {
		t.Errorf("the preview does not show the template as text: %+v", w.gh.Comments(w.owner, w.repo, number))
	}

	w.gh.SetTree(w.owner, w.repo, merge, w.tree)
	w.gh.MergePullRequest(w.owner, w.repo, number, merge)
	githubfake.Deliver(t, w.url+"/webhook", secret, "pull_request", w.mergeEvent(number, merge))
	w.waitFor("the apply's comment", func() bool { return w.commentsContaining(number, "Applied stack") == 1 })
	rel, err := w.store().Latest(context.Background(), "web", "default")
	if err != nil || rel == nil {
		t.Fatalf("no release: %v", err)
	}
	r, ok := rel.State.Resources.ByID("hashicorp:terraform:terraform_data:environ")
	if !ok || r.Attributes["input"] != readEnviron || r.Attributes["output"] != readEnviron {
		t.Errorf("the release records %+v, want the template as text", r.Attributes)
	}

	relJSON, _ := json.Marshal(rel)
	for what, s := range secrets {
		if s == "" {
			t.Fatalf("%s is empty: the test would prove nothing", what)
		}
		for _, c := range w.gh.Comments(w.owner, w.repo, number) {
			if strings.Contains(c.Body, s) {
				t.Errorf("a comment shows %s", what)
			}
		}
		if strings.Contains(string(relJSON), s) {
			t.Errorf("the release shows %s", what)
		}
	}
	calls := rec.Calls(t)
	if len(calls) == 0 {
		t.Fatal("terraform never ran through the recorder")
	}
	for _, c := range calls {
		for what, s := range secrets {
			if what == "an environment's PATH" || what == "the operator's variable" {
				continue
			}
			for _, kv := range c.Env {
				if strings.Contains(kv, s) {
					t.Errorf("terraform %s ran with %s in its environment", c.Command(), what)
				}
			}
		}
		for _, kv := range c.Env {
			if (strings.HasPrefix(kv, "KUSIONPR_") || strings.HasPrefix(kv, "AWS_")) && !strings.HasPrefix(kv, operatorVariable+"=") {
				name, _, _ := strings.Cut(kv, "=")
				t.Errorf("terraform %s ran with %s", c.Command(), name)
			}
		}
		if v, _ := c.Getenv(operatorVariable); v != operatorValue {
			t.Errorf("terraform %s ran without %s, which the operator named", c.Command(), operatorVariable)
		}
	}
}
