// Package terraform is the Terraform runtime: each resource of Kusion's
// Terraform model (id providerNamespace:providerName:resourceType:name, the
// provider in extensions) is planned, applied and destroyed with terraform
// or tofu (exec.go; init through terraform-exec). Plans, and applies, asked
// at about the same time run together as one root module (batch.go); each
// resource keeps a state of its own, and a resource that fails fails alone.
//
// The working folders are a cache. A resource's Terraform state is recorded in
// the release (model.StateExtension) and written back before every command,
// so a runner with an empty cache continues exactly where the release left
// off. A release without it (Kusion's, which records the values of
// `terraform show -json`) is continued from a state rebuilt from those
// values, typed by the provider's schema. Everything the runtime returns is
// redacted: sensitive values, from the provider's schema, the spec and the
// plan's sensitivity data, and any value equal to one of them, are
// fingerprints.
package terraform

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"
	"sync"

	tfjson "github.com/hashicorp/terraform-json"

	"github.com/kusionpr/kusionpr/model"
)

// Runtime runs Terraform resources. It is safe for concurrent use.
type Runtime struct {
	cfg      Config
	allowed  providerAllowlist
	settings providerSettings
	folders  *folders
	schemas  *schemas

	// plans keeps the plan a Read made for the dry-run apply that follows
	// it in a preview: one plan per resource, not two.
	plansMu sync.Mutex
	plans   map[[32]byte]*tfjson.Plan
	// lastPlanned is the folder of each resource's latest plan made by
	// this runtime. A plan left in a folder is applied as it is only when
	// it is that: one made by another process (an earlier preview on the
	// same runner), or before a newer plan of the resource in another
	// folder, was made against an older world. Terraform refuses a saved
	// plan whose state moved, not one whose objects did: a file edited by
	// hand since was left edited, the apply saying it wrote it.
	lastPlanned map[string]string

	batches batcher
}

// New checks that a terraform or tofu binary exists and prepares the cache
// folder; nothing runs until the first operation.
func New(cfg Config) (*Runtime, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("terraform runtime: %w", err)
	}
	f := newFolders(cfg)
	r := &Runtime{cfg: cfg, folders: f, schemas: newSchemas(f), plans: map[[32]byte]*tfjson.Plan{}, lastPlanned: map[string]string{}}
	if err := r.guard(); err != nil {
		return nil, fmt.Errorf("terraform runtime: %w", err)
	}
	r.batches.run = r.runBatch
	return r, nil
}

// Binary is the executable the runtime runs.
func (r *Runtime) Binary() string { return r.cfg.Binary }

// SensitivePaths returns the attributes of res the provider's schema marks
// sensitive, and those holding a value equal to a sensitive one (the
// schema's or the spec's own, SensitivePathsExtension).
func (r *Runtime) SensitivePaths(ctx context.Context, res model.Resource) ([]string, error) {
	t, err := r.target(res)
	if err != nil {
		return nil, err
	}
	s, err := r.schemas.of(ctx, t)
	if err != nil {
		return nil, err
	}
	return union(s.Sensitive, derivedPaths(res.Attributes, union(s.Sensitive, model.SensitivePaths(res)))), nil
}

// Read refreshes res from its recorded state and returns it as it now is,
// nil when it does not exist (never applied, or gone: a provider that finds
// its object changed beyond repair reports it gone too). With no recorded
// state and an import id, the object is read through an import.
func (r *Runtime) Read(ctx context.Context, prior *model.Resource, res model.Resource) (*model.Resource, error) {
	importID, _ := res.Extensions[model.ImportIDExtension].(string)
	if prior == nil && importID == "" {
		return nil, nil
	}
	op := r.begin(ctx, res, prior)
	if op.err != nil {
		return nil, op.fail("read", op.err)
	}
	if prior != nil && reflect.DeepEqual(*prior, res) {
		// A recorded resource the spec no longer has: its recorded attributes
		// are no configuration, so refresh it with only its provider configured.
		return op.refresh(ctx, r)
	}
	plan, err := op.plan(ctx, r, importID, true)
	if err != nil {
		return nil, op.fail("read", err)
	}
	rc := change(plan, op.t.address())
	if rc == nil || rc.Change == nil || rc.Change.Before == nil {
		return nil, nil
	}
	before, _ := model.DeepCopyValue(rc.Change.Before).(map[string]any)
	sensitive := union(op.schema.Sensitive, sensitivePaths(rc.Change.BeforeSensitive, ""), sensitivePaths(rc.Change.AfterSensitive, ""))
	return op.result(before, sensitive, op.state), nil
}

// refresh reads the object through a refresh-only plan, batched with the
// other refreshes asked at the same time: the refreshed state is the plan's
// prior state.
func (op *operation) refresh(ctx context.Context, r *Runtime) (*model.Resource, error) {
	if op.state == nil {
		return nil, nil
	}
	j := &job{op: op}
	r.batches.do(ctx, refreshBatch, j)
	if j.err != nil {
		return nil, op.fail("read", j.err)
	}
	return j.out, nil
}

// refreshAlone refreshes the resource in a folder of its own: what a batch
// falls back to when its plan fails, so that the error is this resource's.
func (op *operation) refreshAlone(ctx context.Context, r *Runtime) (*model.Resource, error) {
	var out *model.Resource
	err := op.run(ctx, r, "", false, func(w *workdir) error {
		plan, err := w.plan(ctx, true)
		if err != nil {
			return err
		}
		out = op.refreshed(plan)
		return nil
	})
	return out, err
}

// refreshed is the resource as a refresh-only plan found it, nil if gone.
func (op *operation) refreshed(plan *tfjson.Plan) *model.Resource {
	sr := stateResource(plan.PriorState, op.t.address())
	if sr == nil {
		return nil
	}
	sensitive := union(op.schema.Sensitive, sensitivePaths(decodeSensitivity(sr.SensitiveValues), ""))
	return op.result(sr.AttributeValues, sensitive, op.state)
}

// Apply plans (dryRun) or applies res. A dry run returns the planned object:
// values the provider computes during apply are model.KnownAfterApply, and a
// replacement lists what forces it in model.ReplacePathsExtension. A failed
// apply returns, with its error, whatever Terraform recorded of the object.
func (r *Runtime) Apply(ctx context.Context, prior *model.Resource, res model.Resource, dryRun bool) (*model.Resource, error) {
	importID := ""
	if prior == nil {
		importID, _ = res.Extensions[model.ImportIDExtension].(string)
	}
	op := r.begin(ctx, res, prior)
	verb := "apply"
	if dryRun {
		verb = "plan"
	}
	if op.err != nil {
		return nil, op.fail(verb, op.err)
	}
	if dryRun {
		plan, err := op.plan(ctx, r, importID, false)
		if err != nil {
			return nil, op.fail(verb, err)
		}
		return op.planned(plan)
	}
	j := &job{op: op, importID: importID}
	r.batches.do(ctx, applyBatch, j)
	if j.err != nil {
		return j.out, op.fail(verb, j.err)
	}
	return j.out, nil
}

// Delete destroys what res's recorded state holds; with nothing recorded
// there is nothing to destroy.
func (r *Runtime) Delete(ctx context.Context, res model.Resource) error {
	op := r.begin(ctx, res, &res)
	if op.err != nil {
		return op.fail("destroy", op.err)
	}
	if op.state == nil {
		return nil
	}
	j := &job{op: op}
	r.batches.do(ctx, destroyBatch, j)
	if j.err != nil {
		return op.fail("destroy", j.err)
	}
	return nil
}

// destroyAlone destroys the resource in a folder of its own: what a batch
// falls back to when its run fails without saying which resource failed.
func (op *operation) destroyAlone(ctx context.Context, r *Runtime) error {
	return op.run(ctx, r, "", false, func(w *workdir) error { return w.destroyCmd(ctx, nil) })
}

// Watch returns at once: an apply returns when Terraform considers the
// object ready.
func (r *Runtime) Watch(context.Context, model.Resource) error { return nil }

// operation is one command on one resource: its target, configuration and
// prior state, and the values to keep out of errors.
type operation struct {
	rt     *Runtime
	res    model.Resource
	t      target
	schema resourceSchema
	state  []byte
	// secrets are the sensitive values the spec and the prior state hold.
	secrets []string
	err     error
}

// begin prepares an operation; a problem is kept in op.err so that it is
// reported scrubbed like any other.
func (r *Runtime) begin(ctx context.Context, res model.Resource, prior *model.Resource) *operation {
	op := &operation{rt: r, res: res}
	op.t, op.err = r.target(res)
	if op.err != nil {
		return op
	}
	// The schema is cached; a failure to get it is that of the provider's
	// installation, which every command would hit.
	op.schema, op.err = r.schemas.of(ctx, op.t)
	op.secrets = secretValues(res.Attributes, union(op.schema.Sensitive, model.SensitivePaths(res)))
	if op.err != nil || prior == nil {
		return op
	}
	switch s := prior.Extensions[model.StateExtension].(type) {
	case string:
		op.state = []byte(s)
		attrs := stateAttributes(op.state, op.t)
		op.secrets = append(op.secrets, secretValues(attrs, union(op.schema.Sensitive, model.SensitivePaths(*prior)))...)
	case nil:
		if prior.Attributes != nil {
			var typed resourceSchema
			if typed, op.err = r.schemas.typed(ctx, op.t); op.err == nil {
				op.state, op.err = stateFromAttributes(op.t, prior.Attributes, typed)
			}
		}
	default:
		op.err = fmt.Errorf("extensions[%q] of the recorded state is not a Terraform state", model.StateExtension)
	}
	return op
}

// target is res as Terraform addresses it, refused before anything is
// written or run if its attributes hold a meta-argument or its provider is
// not allowed.
func (r *Runtime) target(res model.Resource) (target, error) {
	t, err := parseTarget(res)
	if err != nil {
		return target{}, err
	}
	if err := r.allowed.check(t); err != nil {
		return target{}, err
	}
	if err := r.settings.check(t); err != nil {
		return target{}, err
	}
	return t, nil
}

// guard reads what the configuration allows a spec: provider sources and
// provider arguments.
func (r *Runtime) guard() (err error) {
	getenv := os.Getenv
	if f := r.cfg.CLIConfigFile; f != "" {
		getenv = func(k string) string {
			if k == "TF_CLI_CONFIG_FILE" {
				return f
			}
			return os.Getenv(k)
		}
	}
	if r.allowed, err = newProviderAllowlist(r.cfg.AllowProviders, cliConfigFiles(getenv)); err != nil {
		return err
	}
	r.settings, err = parseProviderSettings(r.cfg.ProviderSettings)
	return err
}

// Validate refuses, naming each resource, the Terraform resources of rs the
// runtime would refuse (a meta-argument among the attributes, a provider
// or a provider argument the configuration does not allow), without running anything: a stack is
// refused whole before any of it runs.
func Validate(cfg Config, rs []model.Resource) error {
	var tf []model.Resource
	for _, res := range rs {
		if res.Type == model.Terraform {
			tf = append(tf, res)
		}
	}
	if len(tf) == 0 {
		return nil
	}
	r := &Runtime{cfg: cfg}
	if err := r.guard(); err != nil {
		return err
	}
	var errs []error
	for _, res := range tf {
		if _, err := r.target(res); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", res.ID, err))
		}
	}
	return errors.Join(errs...)
}

// run writes the configuration (with the resource or only its provider)
// and the prior state into the resource's folder, initialises it, and runs fn.
func (op *operation) run(ctx context.Context, r *Runtime, importID string, withResource bool, fn func(w *workdir) error) error {
	config, err := op.t.configuration(op.res.Attributes, withResource, importID)
	if err != nil {
		return err
	}
	return r.folders.run(ctx, op.res.ID, op.t.providerKey(r.cfg.Binary), config, op.state, fn)
}

// plan makes (or, for the dry run after a Read, reuses) the plan of the
// resource against its prior state. keep leaves it for the next call.
func (op *operation) plan(ctx context.Context, r *Runtime, importID string, keep bool) (*tfjson.Plan, error) {
	config, err := op.t.configuration(op.res.Attributes, true, importID)
	if err != nil {
		return nil, err
	}
	key := sha256.Sum256([]byte(r.cfg.Binary + "\x00" + string(config) + "\x00" + string(op.state)))
	r.plansMu.Lock()
	if p, ok := r.plans[key]; ok && !keep {
		delete(r.plans, key)
		r.plansMu.Unlock()
		return p, nil
	}
	r.plansMu.Unlock()

	j := &job{op: op, importID: importID}
	r.batches.do(ctx, planBatch, j)
	if j.err != nil {
		return nil, j.err
	}
	plan := j.plan
	if keep {
		r.plansMu.Lock()
		if len(r.plans) > 1000 {
			// Reads whose dry run never came (a reference not known yet):
			// drop them rather than grow.
			clear(r.plans)
		}
		r.plans[key] = plan
		r.plansMu.Unlock()
	}
	return plan, nil
}

// planAlone plans the resource in a folder of its own: what a batch falls
// back to when its plan fails, so that the error is this resource's.
func (op *operation) planAlone(ctx context.Context, r *Runtime, importID string) (plan *tfjson.Plan, err error) {
	err = op.run(ctx, r, importID, true, func(w *workdir) error {
		plan, err = w.plan(ctx, false)
		return err
	})
	if err == nil {
		r.notePlanned(op.res.ID, op)
	}
	return plan, err
}

// notePlanned records folder as where the latest plan of each op's
// resource is.
func (r *Runtime) notePlanned(folder string, ops ...*operation) {
	r.plansMu.Lock()
	defer r.plansMu.Unlock()
	if len(r.lastPlanned) > 10000 {
		// Forgetting only costs a plan again.
		clear(r.lastPlanned)
	}
	for _, op := range ops {
		r.lastPlanned[op.res.ID] = folder
	}
}

// latestPlanIn says whether folder holds the latest plan this runtime made
// of every resource of g.
func (r *Runtime) latestPlanIn(folder string, g []*job) bool {
	r.plansMu.Lock()
	defer r.plansMu.Unlock()
	for _, j := range g {
		if r.lastPlanned[j.op.res.ID] != folder {
			return false
		}
	}
	return true
}

// planned is the object a plan would leave.
func (op *operation) planned(plan *tfjson.Plan) (*model.Resource, error) {
	rc := change(plan, op.t.address())
	if rc == nil || rc.Change == nil {
		return nil, op.fail("plan", errors.New("the plan has no change for it"))
	}
	c := rc.Change
	sensitive := union(op.schema.Sensitive, sensitivePaths(c.BeforeSensitive, ""), sensitivePaths(c.AfterSensitive, ""))
	if c.Actions.NoOp() {
		before, _ := model.DeepCopyValue(c.Before).(map[string]any)
		return op.result(before, sensitive, op.state), nil
	}
	after, _ := model.DeepCopyValue(c.After).(map[string]any)
	after, _ = markUnknown(after, c.AfterUnknown).(map[string]any)
	out := op.result(after, sensitive, op.state)
	if c.Actions.Replace() {
		paths := replacePaths(c.ReplacePaths)
		if len(paths) == 0 {
			paths = []string{"."}
		}
		out.Extensions[model.ReplacePathsExtension] = paths
	}
	return out, nil
}

// result is the resource as the runtime returns it: the spec's id, type and
// extensions, the given attributes redacted, and the state to record.
// Redacted are the sensitive paths, those of the spec, and every value equal
// to a sensitive value of the object or of the spec (sensitive.go).
func (op *operation) result(attrs map[string]any, sensitive []string, state []byte) *model.Resource {
	declared := model.SensitivePaths(op.res)
	sensitive = union(sensitive, declared)
	sensitive = union(sensitive, derivedPaths(attrs, sensitive,
		sensitiveValues{attrs: op.res.Attributes, paths: union(op.schema.Sensitive, declared)}))
	out := model.Resource{ID: op.res.ID, Type: model.Terraform, Attributes: attrs, DependsOn: op.res.DependsOn}
	out.Extensions = map[string]any{}
	for k, v := range op.res.Extensions {
		out.Extensions[k] = model.DeepCopyValue(v)
	}
	delete(out.Extensions, model.StateExtension)
	delete(out.Extensions, model.ReplacePathsExtension)
	if state != nil {
		out.Extensions[model.StateExtension] = string(state)
	}
	out = model.Redact(model.WithSensitivePaths(out, sensitive))
	return &out
}

// fail wraps err with what was being done, every sensitive value masked.
func (op *operation) fail(verb string, err error) error {
	msg := strings.TrimSpace(err.Error())
	// A failed command's error has the exit status first (exec.go, and
	// terraform-exec's likewise); Terraform's own words follow.
	if first, rest, ok := strings.Cut(msg, "\n"); ok && strings.HasPrefix(first, "exit status ") {
		msg = strings.TrimSpace(rest)
	}
	for _, s := range op.secrets {
		msg = strings.ReplaceAll(msg, s, model.SensitiveMask)
	}
	// The message is rebuilt, so keep what callers test for.
	for _, sentinel := range []error{context.Canceled, context.DeadlineExceeded, ErrNoBinary} {
		if errors.Is(err, sentinel) {
			return fmt.Errorf("%s %s: %s (%w)", verb, op.res.ID, msg, sentinel)
		}
	}
	return fmt.Errorf("%s %s: %s", verb, op.res.ID, msg)
}

// secretValues collects the string values at paths, to scrub them from
// messages. Short values would mask unrelated words and are left.
func secretValues(attrs map[string]any, paths []string) []string {
	var out []string
	for _, p := range paths {
		collect(attrs, strings.Split(p, "."), &out)
	}
	return out
}

func collect(v any, path []string, out *[]string) {
	if len(path) == 0 {
		model.ReplaceStrings(v, func(s string) (any, bool) {
			if len(s) >= 4 && !model.IsFingerprint(s) {
				*out = append(*out, s)
			}
			return nil, false
		})
		return
	}
	switch t := v.(type) {
	case map[string]any:
		if path[0] == "*" {
			for _, x := range t {
				collect(x, path[1:], out)
			}
			return
		}
		collect(t[path[0]], path[1:], out)
	case []any:
		for _, x := range t {
			collect(x, path[1:], out)
		}
	}
}
