package kubernetes

import (
	"errors"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kusionpr/kusionpr/model"
)

// What a dry run could not check, for people: a count of resources goes
// before it ("3 resources in a namespace this apply creates: ...").
const (
	NotCheckedNewNamespace = "in a namespace this apply creates: checked against the API server's schema only, not by admission (webhooks, quotas, LimitRanges)"
	NotCheckedNoSchema     = "in a namespace this apply creates, of a kind the API server publishes no schema for: not checked"
	NotCheckedNewKind      = "of a kind this apply defines: not checked"
)

// unplannable is the error of a dry run the API server could not make
// because something the same apply may create first does not exist yet:
// the object's namespace, or the definition of its kind. Its message is
// the server's; the engine, which knows what the apply creates, reads the
// rest (engine.Unplannable).
type unplannable struct {
	err        error
	notChecked string
	awaits     func(model.Resource) bool
}

func (u *unplannable) Error() string                { return u.err.Error() }
func (u *unplannable) Unwrap() error                { return u.err }
func (u *unplannable) NotChecked() string           { return u.notChecked }
func (u *unplannable) Awaits(r model.Resource) bool { return u.awaits(r) }

// kindNotServed is the dry run's error for an object of a kind the server
// does not serve (err, a no-match error): it awaits a CRD or an APIService
// that serves the kind's group.
func kindNotServed(err error) error {
	gk := noMatchKind(err)
	return &unplannable{err: err, notChecked: NotCheckedNewKind, awaits: func(r model.Resource) bool {
		if r.Type != model.Kubernetes {
			return false
		}
		if defined, _, isCRD := crdServes(r.Attributes); isCRD {
			return defined == gk
		}
		id, err := model.ParseKubernetesID(r.ID)
		return err == nil && id.Kind == "APIService" && strings.HasPrefix(id.APIVersion, "apiregistration.k8s.io/") &&
			str(r.Attributes, "spec", "group") == gk.Group
	}}
}

// noMatchKind is the kind a no-match error names.
func noMatchKind(err error) schema.GroupKind {
	var nk *meta.NoKindMatchError
	if errors.As(err, &nk) {
		return nk.GroupKind
	}
	var nr *meta.NoResourceMatchError
	if errors.As(err, &nr) {
		return schema.GroupKind{Group: nr.PartialResource.Group, Kind: nr.PartialResource.Resource}
	}
	return schema.GroupKind{}
}

// namespaceMissing reports whether err is the server's refusal of t
// because t's namespace does not exist.
func namespaceMissing(err error, t target) bool {
	if !t.namespaced || !apierrors.IsNotFound(err) {
		return false
	}
	var se apierrors.APIStatus
	if !errors.As(err, &se) {
		return false
	}
	d := se.Status().Details
	return d != nil && d.Kind == "namespaces" && d.Name == t.id.Namespace
}

// checkWithoutNamespace checks obj, of t, whose dry run dryRunErr refused
// because t's namespace does not exist, against the API server's schema.
// An object the schema refuses fails with what is wrong with it; one it
// accepts (or has no schema for) gets an unplannable error awaiting the
// namespace.
func (r *Runtime) checkWithoutNamespace(t target, obj map[string]any, dryRunErr error) error {
	problems, found, err := r.schemas.check(t.gvk, obj)
	if err != nil {
		return fmt.Errorf("%w; nor could it be checked against the API server's schema: %w", dryRunErr, err)
	}
	if len(problems) > 0 {
		return scrubError(fmt.Errorf("the API server's schema refuses it (namespace %q does not exist yet, so no dry run could check it): %s",
			t.id.Namespace, strings.Join(problems, "; ")), obj)
	}
	notChecked := NotCheckedNewNamespace
	if !found {
		notChecked = NotCheckedNoSchema
	}
	ns := "v1:Namespace:" + t.id.Namespace
	return &unplannable{err: dryRunErr, notChecked: notChecked, awaits: func(r model.Resource) bool { return r.ID == ns }}
}
