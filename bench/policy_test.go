package bench

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"testing"
	"testing/fstest"
	"time"

	"github.com/kusionpr/kusionpr/engine"
	"github.com/kusionpr/kusionpr/model"
	"github.com/kusionpr/kusionpr/policy"
	"github.com/kusionpr/kusionpr/report"
)

// morePolicies brings the examples' five rules to ten, of the kinds
// platform teams write: each looks at every step of the preview.
const morePolicies = `package main

deny contains {"msg": sprintf("%s: image %s has no pinned tag", [id, c.image]), "rule": "pinned-images"} if {
	some id, step in input.preview.changeSteps
	step.to.attributes.kind == "Deployment"
	some c in step.to.attributes.spec.template.spec.containers
	endswith(c.image, ":latest")
}

deny contains {"msg": sprintf("%s: lives in the default namespace", [id]), "rule": "no-default-namespace"} if {
	some id, step in input.preview.changeSteps
	step.action != "Delete"
	step.to.attributes.metadata.namespace == "default"
}

deny contains {"msg": sprintf("%s: no app label", [id]), "rule": "app-label"} if {
	some id, step in input.preview.changeSteps
	step.action != "Delete"
	not step.to.attributes.metadata.labels.app
}

deny contains {"msg": sprintf("%s: %d replicas, more than 50", [id, step.to.attributes.spec.replicas]), "rule": "replicas"} if {
	some id, step in input.preview.changeSteps
	step.to.attributes.kind == "Deployment"
	step.to.attributes.spec.replicas > 50
}

warn contains sprintf("%s: changes %d fields of a ConfigMap; its Pods keep the old values until restarted", [id, count(step.changes)]) if {
	some id, step in input.preview.changeSteps
	step.action == "Update"
	step.to.attributes.kind == "ConfigMap"
}
`

// policyPreview is the preview of the Kubernetes scenarios' 1,000 objects
// with every tenth one changed, as the engine would put it: the released
// object as from, the changed one as to, the field changes listed; one in
// ten drifted besides, half of them among the changed.
func policyPreview(b *testing.B) (*engine.Preview, *model.Spec) {
	before, after := objects("bench", false), objects("bench", true)
	p := &engine.Preview{Project: "bench", Workspace: "dev", Stack: "dev", PriorRevision: 1, ChangeSteps: map[string]*engine.Step{}}
	spec := &model.Spec{}
	for i := range after {
		md := after[i]["metadata"].(map[string]any)
		id := fmt.Sprintf("%s:%s:%s:%s", after[i]["apiVersion"], after[i]["kind"], md["namespace"], md["name"])
		from := model.Resource{ID: id, Type: model.Kubernetes, Attributes: before[i]}
		to := model.Resource{ID: id, Type: model.Kubernetes, Attributes: after[i]}
		st := &engine.Step{ID: id, Action: engine.UnChanged, From: &from, To: &to}
		diff, err := engine.Diff(before[i], after[i])
		if err != nil {
			b.Fatal(err)
		}
		if len(diff) > 0 {
			st.Action, st.Changes, st.SpecChanges = engine.Update, diff, diff
		}
		if i%20 == 0 || i%20 == 5 {
			st.Drift = []engine.FieldChange{{Path: "metadata.labels.tier", Op: "replace", From: "bench", To: "hand"}}
		}
		p.StepKeys = append(p.StepKeys, id)
		p.ChangeSteps[id] = st
		spec.Resources = append(spec.Resources, to)
	}
	return p, spec
}

// BenchmarkPolicyEval judges the 1,000-object preview with ten rules (the
// examples' five and morePolicies' five), in process and in the sandbox
// the bot and the action evaluate in (a child process started for the
// evaluation, which compiles the rules again and reads the input as JSON),
// beside the time of writing that preview as preview -o json does: the
// least work every preview already does with the same document. Eval's
// time includes turning the input into OPA's values.
//
// Metric units: eval-ms (one Eval of the stack in process, median),
// sandbox-ms (one Eval in the sandbox, median), json-ms (the preview's
// JSON, median), denies and warnings (what the rules found: the 330
// Deployments without limits; 40 ConfigMap updates and 50 changes over
// drift).
func BenchmarkPolicyEval(b *testing.B) {
	ctx := context.Background()
	fsys := fstest.MapFS{"more.rego": {Data: []byte(morePolicies)}}
	examples := os.DirFS("../examples/policy")
	for _, name := range []string{"loadbalancer.rego", "limits.rego", "pvc.rego", "providers.rego", "drift.rego"} {
		src, err := fs.ReadFile(examples, name)
		if err != nil {
			b.Fatal(err)
		}
		fsys[name] = &fstest.MapFile{Data: src}
	}
	set, err := policy.Load(ctx, fsys, policy.Options{})
	if err != nil {
		b.Fatal(err)
	}
	sb, err := policy.Self(0)
	if err != nil {
		b.Fatal(err)
	}
	boxed, err := policy.Load(ctx, fsys, policy.Options{Sandbox: sb})
	if err != nil {
		b.Fatal(err)
	}
	p, spec := policyPreview(b)
	in := policy.Input{Preview: p, Spec: spec, Project: "bench", Stack: "dev", Dir: "bench/dev", Workspace: "dev"}
	r, err := report.New()
	if err != nil {
		b.Fatal(err)
	}
	var evals, boxedEvals, encodes []time.Duration
	var res, boxedRes policy.Result
	for n := 0; b.Loop(); n++ {
		// Rotated, so that none always runs on a heap another left.
		for i := range 3 {
			start := time.Now()
			switch (i + n) % 3 {
			case 0:
				if res, err = set.Eval(ctx, in); err != nil {
					b.Fatal(err)
				}
				evals = append(evals, time.Since(start))
			case 1:
				if boxedRes, err = boxed.Eval(ctx, in); err != nil {
					b.Fatal(err)
				}
				boxedEvals = append(boxedEvals, time.Since(start))
			default:
				if err := r.Render(io.Discard, report.JSON, p, nil); err != nil {
					b.Fatal(err)
				}
				encodes = append(encodes, time.Since(start))
			}
		}
	}
	if len(res.Denies) != 330 || len(res.Warnings) != 90 {
		b.Fatalf("%d denies and %d warnings, want the 330 Deployments without limits and 90 warnings", len(res.Denies), len(res.Warnings))
	}
	if len(boxedRes.Denies) != len(res.Denies) || len(boxedRes.Warnings) != len(res.Warnings) {
		b.Fatalf("the sandbox found %d denies and %d warnings, in process %d and %d", len(boxedRes.Denies), len(boxedRes.Warnings), len(res.Denies), len(res.Warnings))
	}
	for name, ds := range map[string][]time.Duration{"eval": evals, "sandbox": boxedEvals, "json": encodes} {
		ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
		b.ReportMetric(ms(median(ds)), name+"-ms")
		b.ReportMetric(ms(slices.Min(ds)), name+"-min-ms")
		b.ReportMetric(ms(slices.Max(ds)), name+"-max-ms")
	}
	b.ReportMetric(float64(len(res.Denies)), "denies")
	b.ReportMetric(float64(len(res.Warnings)), "warnings")
}
