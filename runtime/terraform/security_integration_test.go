package terraform

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/kusionpr/kusionpr/internal/testenv"
	"github.com/kusionpr/kusionpr/model"
)

// Strings a spec may hold that Terraform would evaluate if they were
// written as they are.
const (
	readEnviron = `${file("/proc/self/environ")}`
	forLoop     = `%{ for k in ["a", "b"] }${k}%{ endfor }`
	preEscaped  = `$${already} and %%{ escaped }`
	unclosed    = `costs $5 and 100%, ${ never closed`
)

// canaries are secrets of the process running the runtime (the bot's App
// key and webhook secret, GitHub tokens, the store's credentials): none may
// reach terraform or a provider.
var canaries = map[string]string{
	"KUSIONPR_WEBHOOK_SECRET":      "canary-webhook-secret-5b1f",
	"KUSIONPR_APP_PRIVATE_KEY":     "-----BEGIN RSA PRIVATE KEY-----canary-app-key-77ad",
	"AWS_SECRET_ACCESS_KEY":        "canary-aws-secret-c0de",
	"GITHUB_TOKEN":                 "ghs_canarygithubtoken0123456789",
	"PGPASSWORD":                   "canary-postgres-password-9e2a",
	"KUSIONPR_STORE_AUTHORIZATION": "Bearer canary-store-token-41c7",
}

// operatorVariable is a variable the operator allowlisted (PassEnv).
const operatorVariable, operatorValue = "KUSIONPR_TEST_OPERATOR_REGION", "operator-allowed-eu-west-9"

func setCanaries(t *testing.T) {
	for k, v := range canaries {
		t.Setenv(k, v)
	}
	t.Setenv(operatorVariable, operatorValue)
}

// checkCalls asserts that terraform ran, never with a canary in its
// environment, always with the operator's variable and the CLI
// configuration.
func checkCalls(t *testing.T, calls []testenv.TerraformCall) {
	t.Helper()
	if len(calls) == 0 {
		t.Fatal("terraform never ran")
	}
	for _, c := range calls {
		for k, v := range canaries {
			for _, kv := range c.Env {
				if strings.Contains(kv, v) {
					t.Errorf("terraform %s ran with %s in its environment", c.Command(), k)
				}
			}
		}
		if v, _ := c.Getenv(operatorVariable); v != operatorValue {
			t.Errorf("terraform %s ran without %s, which the operator allowed", c.Command(), operatorVariable)
		}
		if _, ok := c.Getenv("TF_CLI_CONFIG_FILE"); !ok {
			t.Errorf("terraform %s ran without TF_CLI_CONFIG_FILE", c.Command())
		}
	}
}

// TestIntegrationSpecIsData: template sequences in a spec are planned,
// applied, stored and planned again as the very strings the spec holds,
// with terraform and tofu, and nothing of the environment shows; terraform
// runs with none of our secrets.
func TestIntegrationSpecIsData(t *testing.T) {
	for _, bin := range testenv.TerraformBinaries(t) {
		t.Run(filepath.Base(bin), func(t *testing.T) {
			setCanaries(t)
			rec := testenv.RecordTerraform(t, bin)
			rt, err := New(Config{Binary: rec.Binary, CacheDir: t.TempDir(), PassEnv: []string{"KUSIONPR_TEST_OPERATOR_*"}})
			if err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(t.TempDir(), "environ.txt")
			nested := map[string]any{
				"loop": forLoop, "escaped": preEscaped, "unclosed": unclosed, readEnviron: "as a key",
				"list": []any{readEnviron, map[string]any{"%{ if true }key%{ endif }": forLoop}},
			}
			specs := []model.Resource{
				{ID: "hashicorp:terraform:terraform_data:environ", Type: model.Terraform,
					Attributes: map[string]any{"input": readEnviron}, Extensions: map[string]any{}},
				{ID: "hashicorp:terraform:terraform_data:nested", Type: model.Terraform,
					Attributes: map[string]any{"input": nested}, Extensions: map[string]any{}},
				{ID: "hashicorp:local:local_file:environ", Type: model.Terraform,
					Attributes: map[string]any{"filename": out, "content": readEnviron},
					Extensions: map[string]any{"provider": "registry.terraform.io/hashicorp/local/1.4.0"}},
			}
			ctx := context.Background()
			// Concurrent calls run as one batch: one root module.
			each := func(fn func(i int, res model.Resource) (*model.Resource, error)) []*model.Resource {
				got := make([]*model.Resource, len(specs))
				var wg sync.WaitGroup
				for i, res := range specs {
					wg.Go(func() {
						r, err := fn(i, res)
						if err != nil {
							t.Errorf("%s: %v", res.ID, err)
						}
						got[i] = r
					})
				}
				wg.Wait()
				if t.Failed() {
					t.FailNow()
				}
				return got
			}
			want := func(step string, got []*model.Resource) {
				t.Helper()
				for i, res := range specs {
					for k, v := range res.Attributes {
						if !reflect.DeepEqual(got[i].Attributes[k], v) {
							t.Errorf("%s: %s %s = %#v, want the spec's literal %#v", step, res.ID, k, got[i].Attributes[k], v)
						}
					}
					if o, ok := got[i].Attributes["output"]; ok && !reflect.DeepEqual(o, res.Attributes["input"]) {
						t.Errorf("%s: %s output = %#v, want the input as it is", step, res.ID, o)
					}
				}
				b, _ := json.Marshal(got)
				for _, secret := range append([]string{"PATH=", os.Getenv("PATH")}, mapValues(canaries)...) {
					if strings.Contains(string(b), secret) {
						t.Errorf("%s: the result shows %q", step, secret)
					}
				}
			}

			planned := each(func(_ int, res model.Resource) (*model.Resource, error) { return rt.Apply(ctx, nil, res, true) })
			for i := range specs[:2] {
				planned[i].Attributes["output"] = planned[i].Attributes["input"] // known after apply
			}
			want("plan", planned)
			applied := each(func(_ int, res model.Resource) (*model.Resource, error) { return rt.Apply(ctx, nil, res, false) })
			want("apply", applied)
			for i, res := range applied {
				state, _ := res.Extensions[model.StateExtension].(string)
				if !strings.Contains(state, `/proc/self/environ`) {
					t.Errorf("%s: the recorded state lacks the literal: %s", specs[i].ID, state)
				}
			}
			if b, err := os.ReadFile(out); err != nil || string(b) != readEnviron {
				t.Errorf("local_file wrote %q (%v), want the literal %q", b, err, readEnviron)
			}
			// From the recorded state: the same strings, no change to make
			// (an update would make terraform_data's output unknown).
			read := each(func(i int, res model.Resource) (*model.Resource, error) { return rt.Read(ctx, applied[i], res) })
			want("read", read)
			again := each(func(i int, res model.Resource) (*model.Resource, error) { return rt.Apply(ctx, applied[i], res, true) })
			want("plan after apply", again)
			for i, res := range again {
				if res.Extensions[model.ReplacePathsExtension] != nil || res.Attributes["output"] == model.KnownAfterApply {
					t.Errorf("%s: plan after apply changes it: %v", specs[i].ID, res.Attributes)
				}
			}
			each(func(i int, _ model.Resource) (*model.Resource, error) { return nil, rt.Delete(ctx, *applied[i]) })

			calls := rec.Calls(t)
			checkCalls(t, calls)
			commands := map[string]bool{}
			for _, c := range calls {
				commands[c.Command()] = true
			}
			for _, c := range []string{"init", "plan", "apply", "destroy"} {
				if !commands[c] {
					t.Errorf("terraform %s never ran: %v", c, commands)
				}
			}
		})
	}
}

// TestIntegrationRefusedBeforeTerraformRuns: a provisioner among a
// resource's attributes, and a provider from a host the allowlist does not
// name, are refused naming the resource, and terraform never runs: no init,
// no plan, the provisioner's marker never written.
func TestIntegrationRefusedBeforeTerraformRuns(t *testing.T) {
	for _, bin := range testenv.TerraformBinaries(t) {
		t.Run(filepath.Base(bin), func(t *testing.T) {
			setCanaries(t)
			rec := testenv.RecordTerraform(t, bin)
			rt, err := New(Config{Binary: rec.Binary, CacheDir: t.TempDir(), PassEnv: []string{"KUSIONPR_TEST_OPERATOR_*"}})
			if err != nil {
				t.Fatal(err)
			}
			marker := filepath.Join(t.TempDir(), "provisioned")
			provisioned := model.Resource{ID: "hashicorp:terraform:terraform_data:provisioned", Type: model.Terraform,
				Attributes: map[string]any{"input": "x", "provisioner": map[string]any{"local-exec": map[string]any{"command": "env > " + marker}}},
				Extensions: map[string]any{}}
			evil := model.Resource{ID: "x:y:y_thing:evil", Type: model.Terraform, Attributes: map[string]any{"name": "evil"},
				Extensions: map[string]any{"provider": "evil.example.com/x/y/1.0.0"}}
			ctx := context.Background()
			for _, tc := range []struct {
				res  model.Resource
				want string
			}{{provisioned, "attributes.provisioner"}, {evil, `"evil.example.com/x/y"`}} {
				for _, dry := range []bool{true, false} {
					_, err := rt.Apply(ctx, nil, tc.res, dry)
					if err == nil || !strings.Contains(err.Error(), tc.res.ID) || !strings.Contains(err.Error(), tc.want) {
						t.Errorf("apply (dry run %v) of %s: %v, want a refusal naming it and %s", dry, tc.res.ID, err, tc.want)
					}
				}
			}
			if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the provisioner ran")
			}
			if calls := rec.Calls(t); len(calls) > 0 {
				for _, c := range calls {
					t.Errorf("terraform %s ran for a refused resource", strings.Join(c.Args, " "))
				}
			}
			// The recorder does see what runs: a resource that is allowed
			// is planned, after an init.
			allowed := model.Resource{ID: "hashicorp:local:local_file:allowed", Type: model.Terraform,
				Attributes: map[string]any{"filename": filepath.Join(t.TempDir(), "f"), "content": "x"},
				Extensions: map[string]any{"provider": "registry.terraform.io/hashicorp/local/1.4.0"}}
			if _, err := rt.Apply(ctx, nil, allowed, true); err != nil {
				t.Fatal(err)
			}
			inits := 0
			for _, c := range rec.Calls(t) {
				if c.Command() == "init" {
					inits++
				}
			}
			if inits == 0 {
				t.Errorf("no init recorded for an allowed provider: the recorder sees nothing")
			}
		})
	}
}

func mapValues(m map[string]string) []string {
	var out []string
	for _, v := range m {
		out = append(out, v)
	}
	return out
}
