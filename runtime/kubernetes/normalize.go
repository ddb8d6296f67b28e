package kubernetes

import "github.com/kusionpr/kusionpr/model"

// LastAppliedAnnotation is kubectl's client-side-apply record; it duplicates
// the object (a Secret's data included), so it never leaves the runtime.
const LastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

// Normalize returns a copy of a Kubernetes object without what the server
// keeps for itself: status, and metadata's managedFields, resourceVersion,
// uid, generation, creationTimestamp, selfLink and the last-applied annotation
// (an emptied annotations map is removed). A nil object stays nil.
func Normalize(obj map[string]any) map[string]any {
	if obj == nil {
		return nil
	}
	out, _ := model.DeepCopyValue(obj).(map[string]any)
	delete(out, "status")
	md, ok := out["metadata"].(map[string]any)
	if !ok {
		return out
	}
	for _, k := range []string{"managedFields", "resourceVersion", "uid", "generation", "creationTimestamp", "selfLink"} {
		delete(md, k)
	}
	if ann, ok := md["annotations"].(map[string]any); ok {
		delete(ann, LastAppliedAnnotation)
		if len(ann) == 0 {
			delete(md, "annotations")
		}
	} else if v, present := md["annotations"]; present && v == nil {
		delete(md, "annotations")
	}
	return out
}
