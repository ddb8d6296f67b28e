package terraform

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-version"
	tfjson "github.com/hashicorp/terraform-json"

	"github.com/kusionpr/kusionpr/model"
)

// Batches: Kusion's model keeps one Terraform resource per resource of the
// spec, each with a state of its own, and so does the release. Running each
// in a folder of its own cost five Terraform processes a resource (version,
// plan, show, apply, show): 50 terraform_data resources took six seconds
// where one `terraform apply` of all of them takes a fifth of a second. So
// the plans, and the applies, asked at about the same time run as one root
// module holding all their resources, each at its own address, with their
// states merged into one state file and split again afterwards: the release
// still records one state per resource, and a resource still fails alone.

// A batch takes calls until none came for batchQuiet, and batchWindow
// after its first at the latest: the engine starts every ready resource of
// a batching runtime at once, so they arrive microseconds apart (tens of
// microseconds on a loaded machine), and a batch that waited the whole
// window for calls that had all come cost a plan and an apply 20 ms each.
const (
	batchWindow = 50 * time.Millisecond
	batchQuiet  = 4 * time.Millisecond
)

type batchKind string

const (
	planBatch    batchKind = "plan"
	applyBatch   batchKind = "apply"
	destroyBatch batchKind = "destroy"
	refreshBatch batchKind = "refresh"
)

// job is one resource's part of a batch.
type job struct {
	op       *operation
	importID string

	// plan is the batch's plan, in which the resource has its own address.
	plan *tfjson.Plan
	// out is what an apply left: the object and its own state.
	out *model.Resource
	err error
}

// batcher gathers jobs into batches.
type batcher struct {
	// run runs a batch (Runtime.runBatch).
	run func(*batch)
	// quiet and window replace batchQuiet and batchWindow when set: a
	// test that asserts what came together ran together widens them, as
	// a loaded machine may start goroutines milliseconds apart.
	quiet, window time.Duration
	mu            sync.Mutex
	// open is the batch of each kind still taking jobs.
	open map[batchKind]*batch
}

type batch struct {
	kind batchKind
	// ctx is the batch's own: done when the context of every job in it is,
	// and not before (cancel).
	ctx    context.Context
	cancel context.CancelCauseFunc
	jobs   []*job
	// live counts the jobs whose context is not done; started is set once
	// the batch runs, when no job can leave it any more.
	live    int
	started bool
	done    chan struct{}
	// opened and last are when the first and the latest job came.
	opened, last time.Time
}

// do adds j to the open batch of its kind, opening one if needed, and
// returns when the batch has run. A job whose context ends before its batch
// runs leaves it, with its context's error; once the batch runs, the job
// waits for it, since the batch may be applying its resource: the batch is
// cancelled only when every job's context is done.
func (b *batcher) do(ctx context.Context, kind batchKind, j *job) {
	b.mu.Lock()
	if b.open == nil {
		b.open = map[batchKind]*batch{}
	}
	bt := b.open[kind]
	if bt == nil {
		// The first job's context carries the values (a logger) the batch
		// runs with; none of the jobs' ends it alone.
		bctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
		bt = &batch{kind: kind, ctx: bctx, cancel: cancel, done: make(chan struct{}), opened: time.Now()}
		b.open[kind] = bt
		time.AfterFunc(b.quietFor(), func() { b.close(kind, bt) })
	}
	bt.last = time.Now()
	bt.jobs = append(bt.jobs, j)
	bt.live++
	stop := context.AfterFunc(ctx, func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		if bt.live--; bt.live == 0 {
			bt.cancel(context.Cause(ctx))
			// Nobody waits for it any more: a call coming now opens a
			// batch of its own rather than join one that is cancelled.
			if b.open[kind] == bt {
				delete(b.open, kind)
			}
		}
	})
	defer stop()
	b.mu.Unlock()
	select {
	case <-bt.done:
		return
	case <-ctx.Done():
	}
	b.mu.Lock()
	if !bt.started {
		bt.jobs = slices.DeleteFunc(bt.jobs, func(o *job) bool { return o == j })
		b.mu.Unlock()
		j.err = context.Cause(ctx)
		return
	}
	b.mu.Unlock()
	<-bt.done
}

func (b *batcher) quietFor() time.Duration {
	if b.quiet > 0 {
		return b.quiet
	}
	return batchQuiet
}

func (b *batcher) windowFor() time.Duration {
	if b.window > 0 {
		return b.window
	}
	return batchWindow
}

// close runs bt once no call came for batchQuiet, or batchWindow after its
// first: until then it looks again when that time comes.
func (b *batcher) close(kind batchKind, bt *batch) {
	// A timer that fired late, the process having been off the CPU, may
	// run before the calls that were ready to join when it stopped: let
	// those run first.
	runtime.Gosched()
	b.mu.Lock()
	if wait := time.Until(minTime(bt.last.Add(b.quietFor()), bt.opened.Add(b.windowFor()))); wait > 0 {
		b.mu.Unlock()
		time.AfterFunc(wait, func() { b.close(kind, bt) })
		return
	}
	if b.open[kind] == bt {
		delete(b.open, kind)
	}
	bt.started = true
	b.mu.Unlock()
	if len(bt.jobs) > 0 {
		b.run(bt)
	}
	bt.cancel(nil)
	close(bt.done)
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// runBatch runs a batch as groups that can share a root module: one
// provider source per local name, one version per source, one resource per
// address.
func (r *Runtime) runBatch(bt *batch) {
	r.cfg.Logger.Debug("terraform batch", "kind", bt.kind, "calls", len(bt.jobs), "gathered", time.Since(bt.opened))
	sort.Slice(bt.jobs, func(i, k int) bool { return bt.jobs[i].op.res.ID < bt.jobs[k].op.res.ID })
	var groups [][]*job
	for _, j := range bt.jobs {
		placed := false
		for i, g := range groups {
			if fits(g, j) {
				groups[i] = append(g, j)
				placed = true
				break
			}
		}
		if !placed {
			groups = append(groups, []*job{j})
		}
	}
	var wg sync.WaitGroup
	for _, g := range groups {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.runGroup(bt.ctx, bt.kind, g)
		}()
	}
	wg.Wait()
}

// runGroup runs one group of a batch in its root module. A group whose
// module cannot be made (a recorded state that does not read) runs each of
// its resources as a group of its own, so that only that resource fails.
func (r *Runtime) runGroup(ctx context.Context, kind batchKind, g []*job) {
	m, err := r.module(g, kind == planBatch || kind == applyBatch)
	if err != nil {
		if len(g) == 1 {
			g[0].err = err
			return
		}
		for _, j := range g {
			r.runGroup(ctx, kind, []*job{j})
		}
		return
	}
	switch kind {
	case planBatch:
		r.planGroup(ctx, g, m)
	case applyBatch:
		r.applyGroup(ctx, g, m)
	case destroyBatch:
		r.destroyGroup(ctx, g, m)
	case refreshBatch:
		r.refreshGroup(ctx, g, m)
	}
}

func fits(g []*job, j *job) bool {
	t := j.op.t
	for _, o := range g {
		u := o.op.t
		if u.address() == t.address() ||
			(u.localName == t.localName && u.source != t.source) ||
			(u.source == t.source && u.version != t.version) {
			return false
		}
	}
	return true
}

// module is a group's root module: configuration, merged state, and where
// each job's provider configuration is. Without resources only the providers
// are configured: what a destroy needs, the resources being in the state.
type module struct {
	config []byte
	state  []byte
	// providers is each job's provider address in the module's state.
	providers []string
	key       string
}

func (r *Runtime) module(g []*job, withResources bool) (*module, error) {
	type providerConfig struct {
		localName string
		meta      map[string]any
		alias     string
	}
	var configs []*providerConfig
	required := map[string]any{}
	resources := map[string]map[string]any{}
	var imports []any
	m := &module{providers: make([]string, len(g))}
	var keys []string
	for i, j := range g {
		t := j.op.t
		pc := (*providerConfig)(nil)
		if !t.builtin() {
			req := map[string]any{"source": t.source}
			if t.version != "" {
				req["version"] = t.version
			}
			required[t.localName] = req
			aliases := 0
			for _, c := range configs {
				if c.localName != t.localName {
					continue
				}
				if jsonEqual(c.meta, t.providerMeta) {
					pc = c
					break
				}
				aliases++
			}
			if pc == nil {
				pc = &providerConfig{localName: t.localName, meta: t.providerMeta}
				if aliases > 0 {
					// Resources of one provider with other settings (another
					// region) get a provider configuration of their own.
					pc.alias = fmt.Sprintf("a%d", aliases)
				}
				configs = append(configs, pc)
			}
		}
		// The spec's attributes, written so that Terraform reads them as
		// they are (literal.go); then what the runtime adds itself.
		body, err := literalMap(j.op.res.Attributes)
		if err != nil {
			return nil, fmt.Errorf("%s: attributes: %w", j.op.res.ID, err)
		}
		m.providers[i] = t.providerAddress()
		if pc != nil {
			ref := t.localName
			if pc.alias != "" {
				ref += "." + pc.alias
				m.providers[i] += "." + pc.alias
			}
			if pc.alias != "" || !strings.HasPrefix(t.resourceType, t.localName+"_") {
				body["provider"] = ref
			}
		}
		if resources[t.resourceType] == nil {
			resources[t.resourceType] = map[string]any{}
		}
		resources[t.resourceType][t.name] = body
		if j.importID != "" {
			imports = append(imports, map[string]any{"to": t.address(), "id": escapeTemplate(j.importID)})
		}
		keys = append(keys, t.providerKey(r.cfg.Binary))
	}
	doc := map[string]any{}
	if withResources {
		doc["resource"] = resources
		if len(imports) > 0 {
			doc["import"] = imports
		}
	}
	if len(required) > 0 {
		doc["terraform"] = map[string]any{"required_providers": required}
	}
	providers := map[string][]any{}
	for _, c := range configs {
		block, err := literalMap(c.meta)
		if err != nil {
			return nil, fmt.Errorf("extensions.providerMeta: %w", err)
		}
		if c.alias != "" {
			block["alias"] = c.alias
		}
		providers[c.localName] = append(providers[c.localName], block)
	}
	if len(providers) > 0 {
		doc["provider"] = providers
	}
	var err error
	if m.config, err = json.MarshalIndent(doc, "", "  "); err != nil {
		return nil, fmt.Errorf("encode configuration: %w", err)
	}
	if m.state, err = mergeStates(g, m.providers); err != nil {
		return nil, err
	}
	sort.Strings(keys)
	m.key = strings.Join(dedupe(keys), ",")
	return m, nil
}

func jsonEqual(a, b map[string]any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

func dedupe(sorted []string) []string {
	out := sorted[:0]
	for i, s := range sorted {
		if i == 0 || s != sorted[i-1] {
			out = append(out, s)
		}
	}
	return out
}

// stateFile4 is the part of a state file (format 4) batches rewrite; the
// rest of each resource entry is kept as it is.
type stateFile4 struct {
	Version          int               `json:"version"`
	TerraformVersion string            `json:"terraform_version"`
	Serial           int               `json:"serial"`
	Lineage          string            `json:"lineage"`
	Outputs          map[string]any    `json:"outputs"`
	Resources        []json.RawMessage `json:"resources"`
}

type stateResourceHead struct {
	Mode     string `json:"mode"`
	Type     string `json:"type"`
	Name     string `json:"name"`
	Provider string `json:"provider"`
}

// mergeStates makes one state of the jobs' own, each resource's provider
// set to the one it has in the module. The oldest Terraform version among
// them is kept: a newer binary reads an older state, not the other way.
func mergeStates(g []*job, providers []string) ([]byte, error) {
	merged := stateFile4{Version: 4, Serial: 1, Lineage: "kusionpr-batch", Outputs: map[string]any{}}
	var oldest *version.Version
	for i, j := range g {
		if j.op.state == nil {
			continue
		}
		var s stateFile4
		if err := json.Unmarshal(j.op.state, &s); err != nil {
			return nil, fmt.Errorf("state of %s: %w", j.op.res.ID, err)
		}
		if v, err := version.NewVersion(s.TerraformVersion); err == nil && (oldest == nil || v.LessThan(oldest)) {
			oldest, merged.TerraformVersion = v, s.TerraformVersion
		}
		if s.Serial > merged.Serial {
			merged.Serial = s.Serial
		}
		for _, raw := range s.Resources {
			out, err := withProvider(raw, providers[i])
			if err != nil {
				return nil, fmt.Errorf("state of %s: %w", j.op.res.ID, err)
			}
			merged.Resources = append(merged.Resources, out)
		}
	}
	if len(merged.Resources) == 0 {
		return nil, nil
	}
	return json.Marshal(merged)
}

// withProvider returns a resource entry of a state with another provider.
func withProvider(raw json.RawMessage, provider string) (json.RawMessage, error) {
	var entry map[string]json.RawMessage
	if err := json.Unmarshal(raw, &entry); err != nil {
		return nil, err
	}
	p, err := json.Marshal(provider)
	if err != nil {
		return nil, err
	}
	entry["provider"] = p
	return json.Marshal(entry)
}

// moduleState is a module's state file read once, its managed resources
// by type and name: a batch's outcome is read from it for every resource,
// and reading the whole file for each made a batch of n resources read n
// times n entries.
type moduleState struct {
	file    stateFile4
	entries map[[2]string][]json.RawMessage
}

// readModuleState reads a module's state file; nil reads as no state.
func readModuleState(raw []byte) (*moduleState, error) {
	if raw == nil {
		return nil, nil
	}
	s := &moduleState{entries: map[[2]string][]json.RawMessage{}}
	if err := json.Unmarshal(raw, &s.file); err != nil {
		return nil, fmt.Errorf("read state: %w", err)
	}
	for _, r := range s.file.Resources {
		var head stateResourceHead
		if err := json.Unmarshal(r, &head); err != nil {
			return nil, fmt.Errorf("read state: %w", err)
		}
		if head.Mode == "managed" {
			k := [2]string{head.Type, head.Name}
			s.entries[k] = append(s.entries[k], r)
		}
	}
	return s, nil
}

// own takes j's resource out of the module's state, as the state of a
// folder of its own would hold it; found is false when the state does
// not hold it.
func (s *moduleState) own(j *job) (state []byte, found bool, err error) {
	if s == nil {
		return nil, false, nil
	}
	t := j.op.t
	entries := s.entries[[2]string{t.resourceType, t.name}]
	if len(entries) == 0 {
		return nil, false, nil
	}
	out := stateFile4{Version: s.file.Version, TerraformVersion: s.file.TerraformVersion, Serial: s.file.Serial, Lineage: "kusionpr-" + t.address(), Outputs: map[string]any{}}
	if j.op.state != nil {
		var own stateFile4
		if json.Unmarshal(j.op.state, &own) == nil && own.Lineage != "" {
			out.Lineage = own.Lineage
		}
	}
	for _, r := range entries {
		entry, err := withProvider(r, t.providerAddress())
		if err != nil {
			return nil, false, fmt.Errorf("read state: %w", err)
		}
		out.Resources = append(out.Resources, entry)
	}
	b, err := json.Marshal(out)
	return b, true, err
}

// splitState takes j's resource out of a module's state (moduleState.own).
func splitState(raw []byte, j *job) ([]byte, bool, error) {
	s, err := readModuleState(raw)
	if err != nil {
		return nil, false, err
	}
	return s.own(j)
}

// batchFolder names a group's working folder. Plans and applies share it:
// an apply of what was just planned applies that plan.
func batchFolder(m *module) string { return "batch " + m.key }

// stateFolder names the working folder of a group's module without
// resources, where refreshes and destroys of what only the state holds run.
func stateFolder(m *module) string { return "state " + m.key }

// planGroup plans a group in one run. If the plan fails and more than one
// resource was in it, each is planned on its own, so that the error is
// the failing resource's and the others still get their plans.
func (r *Runtime) planGroup(ctx context.Context, g []*job, m *module) {
	var plan *tfjson.Plan
	err := r.folders.run(ctx, batchFolder(m), m.key, m.config, m.state, func(w *workdir) (err error) {
		plan, err = w.plan(ctx, false)
		return err
	})
	if err == nil {
		ops := make([]*operation, len(g))
		for i, j := range g {
			ops[i] = j.op
		}
		r.notePlanned(batchFolder(m), ops...)
	}
	for _, j := range g {
		switch {
		case err == nil:
			j.plan = plan
		case len(g) > 1 && ctx.Err() == nil:
			j.plan, j.err = j.op.planAlone(ctx, r, j.importID)
		default:
			j.err = err
		}
	}
}

// applyGroup applies a group in one run. Each resource's outcome is read
// from the state the run left and from Terraform's diagnostics, which name
// the resource they are about: one failing resource fails alone. A run that
// failed without saying for which resource (a configuration Terraform
// refused whole) leaves what became of the others unknown: each is then
// applied in a folder of its own, from what the run left of it, so that it
// fails, or not, for itself.
func (r *Runtime) applyGroup(ctx context.Context, g []*job, m *module) {
	for _, j := range r.applyIn(ctx, batchFolder(m), g, m) {
		alone := &job{op: j.op, importID: j.importID}
		am, err := r.module([]*job{alone}, true)
		if err == nil {
			r.applyIn(ctx, j.op.res.ID, []*job{alone}, am)
		}
		j.out, j.err = alone.out, errors.Join(err, alone.err)
	}
}

// stateView is what a module's state says of one resource of it.
type stateView struct {
	own   []byte
	found bool
	err   error
	// read: attrs and marked are the object and its sensitive paths.
	attrs  map[string]any
	marked []string
	read   bool
}

// applyIn applies g in folder and returns the jobs whose outcome the run
// left unknown, their state set to what it left of them; a group of one
// has its error instead.
func (r *Runtime) applyIn(ctx context.Context, folder string, g []*job, m *module) (unsure []*job) {
	var diags diagnostics
	err := r.folders.run(ctx, folder, m.key, m.config, m.state, func(w *workdir) error {
		var applyErr error
		if w.planned && r.latestPlanIn(folder, g) {
			// The preview planned exactly this: apply its plan instead of
			// planning again. Terraform refuses a plan whose state moved
			// since; then it is planned again.
			applyErr = w.applyCmd(ctx, &diags, planFile)
			if applyErr != nil && strings.Contains(diags.buf.String()+applyErr.Error(), "Saved plan is stale") {
				diags = diagnostics{}
				applyErr = w.applyCmd(ctx, &diags, "")
			}
		} else {
			applyErr = w.applyCmd(ctx, &diags, "")
		}
		// The plan is spent: a later apply of the same files must plan.
		_ = os.Remove(filepath.Join(w.dir, planFile))
		raw, err := w.rawState()
		if err != nil {
			return errors.Join(applyErr, err)
		}
		// Each resource's outcome is read from the state file itself;
		// Terraform's show of it only for what the file does not say
		// plainly (moduleState.shown).
		st, stErr := readModuleState(raw)
		views := make([]stateView, len(g))
		needShow := false
		for i, j := range g {
			v := &views[i]
			if v.err = stErr; v.err == nil {
				v.own, v.found, v.err = st.own(j)
			}
			if v.err == nil && v.found {
				v.attrs, v.marked, v.read = st.shown(j)
				needShow = needShow || !v.read
			}
		}
		var shown *tfjson.State
		if needShow {
			if shown, err = w.showState(ctx, filepath.Join(w.dir, stateFile)); err != nil {
				return errors.Join(applyErr, fmt.Errorf("show state: %w", err))
			}
		}
		for i, j := range g {
			v := views[i]
			if v.err != nil {
				j.err = v.err
				continue
			}
			own := v.own
			switch {
			case !v.found:
			case v.read:
				j.out = j.op.result(v.attrs, union(j.op.schema.Sensitive, v.marked), own)
			default:
				if sr := stateResource(shown, j.op.t.address()); sr != nil {
					sensitive := union(j.op.schema.Sensitive, sensitivePaths(decodeSensitivity(sr.SensitiveValues), ""))
					j.out = j.op.result(sr.AttributeValues, sensitive, own)
				}
			}
			switch mine := diags.about(j.op.t.address()); {
			case mine != nil:
				j.err = mine
			case applyErr != nil && (j.out == nil || diags.unattributed()):
				if len(g) > 1 && ctx.Err() == nil {
					if raw != nil {
						j.op.state = own
					}
					unsure = append(unsure, j)
				} else {
					j.err = diags.or(applyErr)
				}
			case j.out == nil:
				j.err = errors.New("the state has no object after apply")
			}
		}
		return nil
	})
	if err != nil {
		for _, j := range g {
			if j.err == nil && j.out == nil {
				j.err = err
			}
		}
	}
	return unsure
}

// destroyGroup destroys a group in one run. What the state the run left no
// longer holds is destroyed; what it still holds failed, with the
// diagnostics naming it. One resource can stop the whole run (a destroy
// plans before it destroys anything): the resources no diagnostic names are
// then destroyed each on its own, so that the one fails alone.
func (r *Runtime) destroyGroup(ctx context.Context, g []*job, m *module) {
	var diags diagnostics
	var left []*job
	ran := false
	err := r.folders.run(ctx, stateFolder(m), m.key, m.config, m.state, func(w *workdir) error {
		destroyErr := w.destroyCmd(ctx, &diags)
		raw, err := w.rawState()
		if err != nil {
			return errors.Join(destroyErr, err)
		}
		ran = true
		st, stErr := readModuleState(raw)
		for _, j := range g {
			found, err := false, stErr
			if err == nil {
				_, found, err = st.own(j)
			}
			switch {
			case err != nil:
				j.err = err
			case !found:
			default:
				if mine := diags.about(j.op.t.address()); mine != nil {
					j.err = mine
				} else {
					left = append(left, j)
				}
			}
		}
		if destroyErr == nil && len(left) > 0 {
			destroyErr = errors.New("still in the state after destroy")
		}
		if destroyErr != nil {
			return diags.or(destroyErr)
		}
		return nil
	})
	if !ran {
		left = g
	}
	for _, j := range left {
		if len(g) > 1 && ctx.Err() == nil {
			j.err = j.op.destroyAlone(ctx, r)
		} else {
			j.err = err
		}
	}
}

// refreshGroup refreshes a group's recorded objects in one refresh-only
// plan. If it fails and more than one resource was in it, each is refreshed
// on its own, so that the error is the failing resource's.
func (r *Runtime) refreshGroup(ctx context.Context, g []*job, m *module) {
	var plan *tfjson.Plan
	err := r.folders.run(ctx, stateFolder(m), m.key, m.config, m.state, func(w *workdir) (err error) {
		plan, err = w.plan(ctx, true)
		return err
	})
	for _, j := range g {
		switch {
		case err == nil:
			j.out = j.op.refreshed(plan)
		case len(g) > 1 && ctx.Err() == nil:
			j.out, j.err = j.op.refreshAlone(ctx, r)
		default:
			j.err = err
		}
	}
}

// diagnostics reads Terraform's machine-readable output (-json) and keeps
// its errors, by the resource they name.
type diagnostics struct {
	buf    bytes.Buffer
	parsed bool
	errs   []diagnostic
}

type diagnostic struct {
	address string
	text    string
}

func (d *diagnostics) Write(p []byte) (int, error) { return d.buf.Write(p) }

func (d *diagnostics) parse() {
	if d.parsed {
		return
	}
	d.parsed = true
	sc := bufio.NewScanner(io.Reader(&d.buf))
	sc.Buffer(make([]byte, 64*1024), 16<<20)
	for sc.Scan() {
		var line struct {
			Type       string `json:"type"`
			Diagnostic struct {
				Severity string `json:"severity"`
				Summary  string `json:"summary"`
				Detail   string `json:"detail"`
				Address  string `json:"address"`
			} `json:"diagnostic"`
		}
		if json.Unmarshal(sc.Bytes(), &line) != nil || line.Type != "diagnostic" || line.Diagnostic.Severity != "error" {
			continue
		}
		text := strings.TrimSpace("Error: " + line.Diagnostic.Summary + "\n\n" + line.Diagnostic.Detail)
		d.errs = append(d.errs, diagnostic{address: line.Diagnostic.Address, text: text})
	}
}

// about joins the errors naming address.
func (d *diagnostics) about(address string) error {
	d.parse()
	var texts []string
	for _, e := range d.errs {
		if e.address == address {
			texts = append(texts, e.text)
		}
	}
	if len(texts) == 0 {
		return nil
	}
	return errors.New(strings.Join(texts, "\n\n"))
}

// unattributed says whether some error of a failed run names no resource,
// or the run said nothing: then a resource without an error of its own may
// not have been applied either.
func (d *diagnostics) unattributed() bool {
	d.parse()
	if len(d.errs) == 0 {
		return true
	}
	for _, e := range d.errs {
		if e.address == "" {
			return true
		}
	}
	return false
}

// or is Terraform's own account of a failed run, if its output has one,
// else err.
func (d *diagnostics) or(err error) error {
	d.parse()
	if len(d.errs) == 0 {
		return err
	}
	var texts []string
	for _, e := range d.errs {
		texts = append(texts, e.text)
	}
	return errors.New(strings.Join(texts, "\n\n"))
}
