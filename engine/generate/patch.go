package generate

import (
	"encoding/json"
	"fmt"

	jsonpatch "github.com/evanphx/json-patch/v5"

	"github.com/kusionpr/kusionpr/engine/generate/module"
	"github.com/kusionpr/kusionpr/model"
)

// removeEnv as an environment variable's value asks to remove the
// variable of that name from the workload, as Kusion's patcher does.
const removeEnv = "ops://kusionstack.io/remove"

func wantsWorkload(p *module.Patcher) bool {
	return len(p.Environments) > 0 || len(p.Labels) > 0 || len(p.Annotations) > 0 ||
		len(p.PodLabels) > 0 || len(p.PodAnnotations) > 0
}

// podTemplatePath is where a workload kind keeps its pod template.
func podTemplatePath(kind string) []string {
	if kind == "CronJob" {
		return []string{"spec", "jobTemplate", "spec", "template"}
	}
	return []string{"spec", "template"}
}

// patchWorkload applies a module's patch to the workload: labels and
// annotations on the object and on its pods, and environment variables in
// every container, ahead of the developer's own so theirs can refer to
// them.
func patchWorkload(w *model.Resource, p *module.Patcher) error {
	attrs := w.Attributes
	kind, _ := attrs["kind"].(string)
	tmpl := podTemplatePath(kind)
	meta := mapAt(attrs, "metadata")
	mergeStrings(meta, "labels", p.Labels)
	mergeStrings(meta, "annotations", p.Annotations)
	if len(p.PodLabels)+len(p.PodAnnotations) > 0 {
		podMeta := mapAt(attrs, append(tmpl, "metadata")...)
		mergeStrings(podMeta, "labels", p.PodLabels)
		mergeStrings(podMeta, "annotations", p.PodAnnotations)
	}
	if len(p.Environments) == 0 {
		return nil
	}
	spec, _ := lookupMap(attrs, append(tmpl, "spec")...)
	containers, _ := spec["containers"].([]any)
	if len(containers) == 0 {
		return fmt.Errorf("patching workload %s: it has no containers to set environment variables in", w.ID)
	}
	var add []any
	remove := map[string]bool{}
	for _, e := range p.Environments {
		if e.Value == removeEnv {
			remove[e.Name] = true
			continue
		}
		v, err := toMap(e)
		if err != nil {
			return fmt.Errorf("patching workload %s: environment variable %s: %w", w.ID, e.Name, err)
		}
		add = append(add, v)
	}
	for i, c := range containers {
		cm, ok := c.(map[string]any)
		if !ok {
			return fmt.Errorf("patching workload %s: container %d is not a mapping", w.ID, i)
		}
		old, _ := cm["env"].([]any)
		env := make([]any, 0, len(add)+len(old))
		env = append(env, model.DeepCopyValue(add).([]any)...)
		for _, e := range old {
			if em, _ := e.(map[string]any); em != nil && remove[fmt.Sprint(em["name"])] {
				continue
			}
			env = append(env, e)
		}
		if len(env) == 0 {
			delete(cm, "env")
		} else {
			cm["env"] = env
		}
	}
	return nil
}

// jsonPatch applies a JSON patch (RFC 6902) or a merge patch (RFC 7396)
// to a resource's attributes.
func jsonPatch(r *model.Resource, p module.JSONPatcher) error {
	doc, err := json.Marshal(r.Attributes)
	if err != nil {
		return fmt.Errorf("patching %s: %w", r.ID, err)
	}
	var out []byte
	switch p.Type {
	case module.MergePatch:
		if out, err = jsonpatch.MergePatch(doc, p.Payload); err != nil {
			return fmt.Errorf("patching %s: merge patch: %w", r.ID, err)
		}
	case module.JSONPatch:
		patch, err := jsonpatch.DecodePatch(p.Payload)
		if err != nil {
			return fmt.Errorf("patching %s: decoding the JSON patch: %w", r.ID, err)
		}
		opts := jsonpatch.NewApplyOptions()
		opts.EnsurePathExistsOnAdd = true
		opts.AllowMissingPathOnRemove = true
		if out, err = patch.ApplyWithOptions(doc, opts); err != nil {
			return fmt.Errorf("patching %s: JSON patch: %w", r.ID, err)
		}
	default:
		return fmt.Errorf("patching %s: unknown patch type %q (want %s or %s)", r.ID, p.Type, module.MergePatch, module.JSONPatch)
	}
	var attrs map[string]any
	if err := json.Unmarshal(out, &attrs); err != nil {
		return fmt.Errorf("patching %s: the patch leaves no mapping: %w", r.ID, err)
	}
	r.Attributes = attrs
	return nil
}

// mapAt returns the mapping at path below m, creating what is missing.
func mapAt(m map[string]any, path ...string) map[string]any {
	for _, k := range path {
		next, ok := m[k].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[k] = next
		}
		m = next
	}
	return m
}

func lookupMap(m map[string]any, path ...string) (map[string]any, bool) {
	for _, k := range path {
		next, ok := m[k].(map[string]any)
		if !ok {
			return nil, false
		}
		m = next
	}
	return m, true
}

// mergeStrings lays add over the string map m[field]; the patch wins.
func mergeStrings(m map[string]any, field string, add map[string]string) {
	if len(add) == 0 {
		return
	}
	cur, _ := m[field].(map[string]any)
	if cur == nil {
		cur = map[string]any{}
	}
	for k, v := range add {
		cur[k] = v
	}
	m[field] = cur
}

// toMap turns a typed value into the plain tree attributes hold.
func toMap(v any) (map[string]any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	return m, json.Unmarshal(b, &m)
}
