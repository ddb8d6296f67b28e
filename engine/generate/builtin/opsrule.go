package builtin

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/kusionpr/kusionpr/engine/generate/module"
	"github.com/kusionpr/kusionpr/model"
)

// opsRuleModule is the catalog's opsrule module: how many of a service's
// pods may be unavailable at once during an update.
type opsRuleModule struct{}

type opsRuleConfig struct {
	Type string `json:"_type"`
	// MaxUnavailable is an int or a string, as Kubernetes' IntOrString.
	MaxUnavailable any `json:"maxUnavailable"`
}

type opsRulePlatform struct {
	MaxUnavailable    any `json:"maxUnavailable"`
	ImportedResources any `json:"importedResources"`
}

const defaultMaxUnavailable = "25%"

// deploymentStrategyPatch is the merge patch for a Deployment, a struct so
// that the payload reads in the order one would write it.
type deploymentStrategyPatch struct {
	Spec struct {
		Strategy struct {
			Type          string `json:"type"`
			RollingUpdate struct {
				MaxUnavailable any `json:"maxUnavailable"`
			} `json:"rollingUpdate"`
		} `json:"strategy"`
	} `json:"spec"`
}

func (opsRuleModule) Generate(_ context.Context, req module.Request) (*module.Response, error) {
	if empty(req.DevConfig) && empty(req.PlatformConfig) {
		return &module.Response{}, nil
	}
	var dev opsRuleConfig
	var plat opsRulePlatform
	var p problems
	p.addErr(module.Decode(module.DevConfig, req.DevConfig, &dev))
	p.addErr(module.Decode(module.PlatformConfig, req.PlatformConfig, &plat))
	wl, err := topLevel(module.Workload, req.Workload)
	p.addErr(err)
	var wlType, wlKind string
	p.addErr(decodeNode(module.Workload, wl["_type"], "_type", &wlType))
	p.addErr(decodeNode(module.Workload, wl["type"], "type", &wlKind))
	if err := p.err(); err != nil {
		return nil, err
	}

	var value any = defaultMaxUnavailable
	switch {
	case dev.MaxUnavailable != nil:
		value, err = maxUnavailable(module.DevConfig, dev.MaxUnavailable)
	case plat.MaxUnavailable != nil:
		value, err = maxUnavailable(module.PlatformConfig, plat.MaxUnavailable)
	}
	if err != nil {
		return nil, err
	}

	// A job's pods are not updated in place, and without a workload there
	// is nothing to rule over.
	if len(wl) == 0 || strings.HasPrefix(wlType, "job.") {
		return &module.Response{}, nil
	}
	uname := uniqueName(req)
	if strings.EqualFold(wlKind, kindCollaSet) {
		rule := kubeResource(collaSetAPI, "PodTransitionRule", objectMeta{name: uname, namespace: req.Project},
			map[string]any{"spec": map[string]any{
				"selector": map[string]any{"matchLabels": anyMap(uniqueLabels(req))},
				"rules": []any{map[string]any{
					"name":            "maxUnavailable",
					"availablePolicy": map[string]any{"maxUnavailableValue": value},
				}},
			}})
		return &module.Response{Resources: model.Resources{rule}}, nil
	}

	// Our choice, not the catalog's: the catalog's opsrule does nothing for
	// a Deployment, which leaves the developer's setting silently unused.
	// Kusion's older in-tree service generator set exactly this strategy,
	// and a Deployment has no other place for the rule.
	var patch deploymentStrategyPatch
	patch.Spec.Strategy.Type = "RollingUpdate"
	patch.Spec.Strategy.RollingUpdate.MaxUnavailable = value
	payload, err := json.Marshal(patch)
	if err != nil {
		return nil, fmt.Errorf("opsrule: encoding the Deployment's strategy patch: %w", err)
	}
	target := model.KubernetesIDOf("apps/v1", kindDeployment, req.Project, uname)
	return &module.Response{Patcher: &module.Patcher{
		JSONPatchers: map[string]module.JSONPatcher{target: {Type: module.MergePatch, Payload: payload}},
	}}, nil
}

// maxUnavailable checks an IntOrString as Kubernetes reads it: a count of
// pods, or a percentage of them. A string of digits is a count, as
// intstr.Parse makes it.
func maxUnavailable(src module.Source, v any) (any, error) {
	const want = "want a number of pods (2) or a percentage of them (25%)"
	switch t := v.(type) {
	case int:
		if t < 0 {
			return nil, module.Invalid(src, "maxUnavailable", "must not be negative")
		}
		return t, nil
	case string:
		if n, err := strconv.Atoi(t); err == nil {
			return maxUnavailable(src, n)
		}
		digits, ok := strings.CutSuffix(t, "%")
		n, err := strconv.Atoi(digits)
		if !ok || err != nil || strings.HasPrefix(digits, "+") {
			return nil, module.Invalid(src, "maxUnavailable", "%s", want)
		}
		if n < 0 || n > 100 {
			return nil, module.Invalid(src, "maxUnavailable", "a percentage must be between 0%% and 100%%")
		}
		return t, nil
	default:
		return nil, module.Invalid(src, "maxUnavailable", "%s", want)
	}
}
