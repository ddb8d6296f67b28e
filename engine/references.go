package engine

import (
	"github.com/kusionpr/kusionpr/model"
)

// resolveReferences returns r with every $kusion_path replaced by the value
// it points at, taken from the resource lookup gives (live in a preview, just
// applied in an apply). A reference whose source is not there yet becomes
// KnownAfterApply and unknown is true.
func resolveReferences(r model.Resource, refs *model.ReferenceIndex, lookup func(id string) *model.Resource) (resolved model.Resource, unknown bool) {
	out := r.DeepCopy()
	if len(refs.References(out.Attributes)) == 0 {
		return out, false
	}
	attrs := model.ReplaceStrings(out.Attributes, func(s string) (any, bool) {
		ref, ok := refs.Parse(s)
		if !ok || ref.ResourceID == "" {
			return nil, false
		}
		src := lookup(ref.ResourceID)
		if src == nil {
			unknown = true
			return KnownAfterApply, true
		}
		v, ok := model.Lookup(src.Attributes, ref.Path)
		if !ok || v == KnownAfterApply {
			unknown = true
			return KnownAfterApply, true
		}
		return v, true
	})
	out.Attributes, _ = attrs.(map[string]any)
	return out, unknown
}
