package builtin

import (
	"testing"

	"github.com/kusionpr/kusionpr/engine/generate/module"
)

func TestOpsRule(t *testing.T) {
	const deployment = "apps/v1:Deployment:proj:proj-dev-web"
	cases := []struct {
		name, workload, dev, platform string
		// wantPatch is the merge patch of the Deployment, "" for none.
		wantPatch string
		// wantRule is the PodTransitionRule's maxUnavailableValue, nil for none.
		wantRule any
	}{
		{
			name:      "Deployment gets a rolling update strategy",
			workload:  "_type: service.Service\ncontainers: {main: {image: x}}",
			dev:       `maxUnavailable: "30%"`,
			wantPatch: `{"spec":{"strategy":{"type":"RollingUpdate","rollingUpdate":{"maxUnavailable":"30%"}}}}`,
		},
		{
			name:      "default when the developer gives none",
			workload:  "_type: service.Service\ntype: Deployment",
			dev:       "_type: opsrule.OpsRule",
			wantPatch: `{"spec":{"strategy":{"type":"RollingUpdate","rollingUpdate":{"maxUnavailable":"25%"}}}}`,
		},
		{
			name:      "platform value when the developer gives none",
			workload:  "_type: service.Service",
			dev:       "_type: opsrule.OpsRule",
			platform:  "maxUnavailable: 2\nimportedResources: {}",
			wantPatch: `{"spec":{"strategy":{"type":"RollingUpdate","rollingUpdate":{"maxUnavailable":2}}}}`,
		},
		{
			name:      "developer wins over platform",
			workload:  "_type: service.Service",
			dev:       "maxUnavailable: 1",
			platform:  "maxUnavailable: 40%",
			wantPatch: `{"spec":{"strategy":{"type":"RollingUpdate","rollingUpdate":{"maxUnavailable":1}}}}`,
		},
		{
			name:     "CollaSet gets a PodTransitionRule",
			workload: "_type: service.Service\ntype: collaset",
			dev:      `maxUnavailable: "30%"`,
			wantRule: "30%",
		},
		{
			name:     "a string of digits is a count",
			workload: "_type: service.Service\ntype: CollaSet",
			dev:      `maxUnavailable: "3"`,
			wantRule: 3,
		},
		{
			name:     "a job has no rule",
			workload: "_type: job.Job\nschedule: x",
			dev:      `maxUnavailable: "30%"`,
		},
		{
			name: "no workload, no rule",
			dev:  `maxUnavailable: "30%"`,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp := generate(t, "opsrule", request(c.workload, c.dev, c.platform, ""))
			if c.wantPatch == "" {
				if resp.Patcher != nil {
					t.Errorf("patcher %#v", resp.Patcher)
				}
			} else {
				if resp.Patcher == nil {
					t.Fatal("no patcher")
				}
				equal(t, "patchers", len(resp.Patcher.JSONPatchers), 1)
				p, ok := resp.Patcher.JSONPatchers[deployment]
				if !ok {
					t.Fatalf("no patch of %s: %#v", deployment, resp.Patcher.JSONPatchers)
				}
				equal(t, "type", p.Type, module.MergePatch)
				equal(t, "payload", string(p.Payload), c.wantPatch)
				if len(resp.Patcher.Environments) != 0 || resp.Patcher.Labels != nil {
					t.Errorf("patcher sets more: %#v", resp.Patcher)
				}
			}
			if c.wantRule == nil {
				equal(t, "resources", len(resp.Resources), 0)
				return
			}
			equal(t, "ids", ids(resp.Resources), []string{"apps.kusionstack.io/v1alpha1:PodTransitionRule:proj:proj-dev-web"})
			r := resp.Resources[0]
			equal(t, "GVK", r.Extensions["GVK"], "apps.kusionstack.io/v1alpha1, Kind=PodTransitionRule")
			equal(t, "spec", get(t, r.Attributes, "spec"), map[string]any{
				"selector": map[string]any{"matchLabels": map[string]any{
					"app.kubernetes.io/part-of": "proj", "app.kubernetes.io/name": "web",
				}},
				"rules": []any{map[string]any{
					"name":            "maxUnavailable",
					"availablePolicy": map[string]any{"maxUnavailableValue": c.wantRule},
				}},
			})
		})
	}
}

func TestOpsRuleErrors(t *testing.T) {
	dc, pc := module.DevConfig, module.PlatformConfig
	const want = "want a number of pods (2) or a percentage of them (25%)"
	cases := []struct {
		name, dev, platform string
		wantErr             wantErr
	}{
		{"percentage over 100", `maxUnavailable: "101%"`, "", wantErr{dc, "maxUnavailable", "a percentage must be between 0% and 100%"}},
		{"negative", "maxUnavailable: -1", "", wantErr{dc, "maxUnavailable", "must not be negative"}},
		{"not a number", "maxUnavailable: some", "", wantErr{dc, "maxUnavailable", want}},
		{"a boolean", "maxUnavailable: true", "", wantErr{dc, "maxUnavailable", want}},
		{"a fraction", "maxUnavailable: 0.5", "", wantErr{dc, "maxUnavailable", want}},
		{"bad platform value", "_type: opsrule.OpsRule", "maxUnavailable: 50 %", wantErr{pc, "maxUnavailable", want}},
		{"unknown field", "maxUnavailble: 1", "", wantErr{dc, "maxUnavailble", "unknown field (want one of _type, maxUnavailable)"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			checkErrors(t, "opsrule", request("_type: service.Service", c.dev, c.platform, ""), []wantErr{c.wantErr})
		})
	}
}
