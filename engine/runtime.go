// Package engine turns a Spec into changes: it previews the three-way
// difference between the desired spec, the prior release and the live
// objects, applies and destroys along the dependency graph in parallel, waits
// for readiness, and records every operation as a Release.
package engine

import (
	"context"

	"github.com/kusionpr/kusionpr/model"
)

// Runtime reads and changes the real objects of one resource type
// (model.Kubernetes, model.Terraform). Every resource a Runtime returns has
// its sensitive values redacted with model.Redact, and every error it returns
// starts with what it was doing and the resource id ("apply <id>: ...").
type Runtime interface {
	// Read returns the live object for r, or nil when it does not exist
	// (including a kind the server does not know yet). prior is the last
	// recorded state of r, nil if none.
	Read(ctx context.Context, prior *model.Resource, r model.Resource) (*model.Resource, error)
	// Apply makes the object match desired and returns it as the system now
	// holds it. With dryRun nothing changes and the result is what would be.
	Apply(ctx context.Context, prior *model.Resource, desired model.Resource, dryRun bool) (*model.Resource, error)
	// Delete removes the object; deleting one that does not exist succeeds.
	Delete(ctx context.Context, r model.Resource) error
	// Watch waits until the object is ready, ctx ends, or the runtime's
	// readiness timeout passes.
	Watch(ctx context.Context, r model.Resource) error
}

// Capabilities is what the engine may count on a runtime for beyond
// Runtime's calls, declared with the runtime (see Driver) so that the engine
// reads it without building the runtime. Each is a promise the runtime
// keeps, and engine/runtimetest checks every one claimed; one not claimed
// costs speed, never correctness.
type Capabilities struct {
	// Batches: the runtime gathers concurrent calls into one run
	// (Terraform: one plan, or one apply, of many resources). The engine
	// lets every ready resource of such a runtime call at once, outside its
	// parallelism: a call waiting for its batch costs nothing, and the
	// batch is the larger for it.
	Batches bool
	// SpecFieldsOnly: an apply sets only the fields a spec gives and leaves
	// every other field to whoever set it (Kubernetes server-side apply).
	// For such a runtime a field a controller added is no reason to apply
	// again; for the others (a Terraform plan reverts what its
	// configuration does not hold) the whole object must be as recorded.
	SpecFieldsOnly bool
}

// Driver is how the engine reaches the runtime of one resource type: what
// it can do, and how to build it. The engine builds it once, on first use,
// with the context of that use, so a stack without resources of the type
// needs none of its configuration (no kubeconfig, no terraform binary) and
// a failure to build it is that of the resources that needed it.
type Driver struct {
	Capabilities
	Open func(ctx context.Context) (Runtime, error)
}

// Built is the Driver of a runtime already built, with no capability beyond
// the calls it answers.
func Built(rt Runtime) Driver {
	return Driver{Open: func(context.Context) (Runtime, error) { return rt, nil }}
}

// Beyond Capabilities, a built runtime may answer two more calls, found by
// its method set as io.Copy finds an io.WriterTo: Prefetcher and
// SensitivePather. They are calls made on the runtime, not promises read
// before it exists. Its errors may say more, too: Unplannable.

// Prefetcher is implemented by runtimes that read many objects faster at
// once than one by one (Kubernetes: one LIST per namespace and kind instead
// of a GET per object). A preview hands it every resource it is about to
// read; Read then answers from what was fetched.
type Prefetcher interface {
	Prefetch(ctx context.Context, rs []model.Resource)
}

// SensitivePather is implemented by runtimes that know, before reading
// anything, which attributes of a resource hold secrets (a Terraform
// provider's schema). The engine masks those paths in every view of the spec,
// including the views of resources that could not be previewed.
type SensitivePather interface {
	SensitivePaths(ctx context.Context, r model.Resource) ([]string, error)
}

// Unplannable is implemented by the error of a dry run the system could not
// make because something the same apply may create first does not exist
// yet (a Kubernetes object's namespace, or the definition of its kind),
// once the runtime has checked what it could without it. A preview shows
// such a resource as the spec has it, with what was not checked, when a
// dependency it Awaits is being created; any other error of a dry run, or
// this one with nothing it awaits being created, fails the resource's
// preview: a preview passes nothing it has not checked.
type Unplannable interface {
	error
	// Awaits reports whether r, which the same apply creates, is what the
	// dry run lacked.
	Awaits(r model.Resource) bool
	// NotChecked says, for people, what is left to the apply; it follows
	// a count of resources ("3 resources in a namespace this apply
	// creates: ..."), so it names none.
	NotChecked() string
}
