package engine

import (
	"github.com/kusionpr/kusionpr/model"
)

// resolveReferences returns r with every $kusion_path replaced by the value
// it points at, taken from the resource lookup gives (live in a preview, just
// applied in an apply). A reference whose source is not there yet becomes
// KnownAfterApply and unknown is true.
func resolveReferences(r model.Resource, all model.Resources, lookup func(id string) *model.Resource) (resolved model.Resource, unknown bool) {
	ids := idsOf(all)
	out := r.DeepCopy()
	attrs := model.ReplaceStrings(out.Attributes, func(s string) (any, bool) {
		refs := model.References(s, ids)
		if len(refs) != 1 || refs[0].ResourceID == "" {
			return nil, false
		}
		src := lookup(refs[0].ResourceID)
		if src == nil {
			unknown = true
			return KnownAfterApply, true
		}
		v, ok := model.Lookup(src.Attributes, refs[0].Path)
		if !ok || v == KnownAfterApply {
			unknown = true
			return KnownAfterApply, true
		}
		return v, true
	})
	out.Attributes, _ = attrs.(map[string]any)
	return out, unknown
}
