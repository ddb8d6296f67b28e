package generate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"reflect"
	"slices"
	"strings"

	"golang.org/x/sync/errgroup"
	"gopkg.in/yaml.v3"

	"github.com/kusionpr/kusionpr/engine/generate/module"
	"github.com/kusionpr/kusionpr/engine/spec"
	"github.com/kusionpr/kusionpr/model"
)

// Generator generates Specs from AppConfigurations.
type Generator struct {
	// Builtins are the modules this program carries, by name (see
	// engine/generate/builtin). A module the workspace points at the
	// KusionStack catalog (oci://ghcr.io/kusionstack/<name>) or does not
	// configure at all is served by its built-in namesake.
	Builtins map[string]module.Generator
	// ModuleHome is where Kusion module binaries are found; "" means
	// module.Home() ($KUSION_MODULE_PATH, else ~/.kusion/modules).
	ModuleHome string
	// ModuleEnv names variables of this process's environment module
	// binaries get besides module.Environ's few; they see nothing else.
	ModuleEnv []string
	// Parallelism bounds module calls at once (default 8): a module
	// binary is a process.
	Parallelism int
	Logger      *slog.Logger
}

// Input is what one stack's Spec is generated from.
type Input struct {
	Project string
	Stack   string
	// Namespace holds the apps' Kubernetes objects: the project's name
	// unless a kubernetesNamespace extension names another.
	Namespace string
	// AppFile names the AppConfigurations' file in messages.
	AppFile   string
	Apps      []App
	Workspace *Workspace
}

// Extension keys a generated Spec carries, as Kusion's do.
const (
	// gvkExtension records a Kubernetes resource's group, version and kind.
	gvkExtension = "GVK"
	// isWorkloadExtension marks the resource the workload module made the
	// workload, the one modules' patches change.
	isWorkloadExtension = "kusion.io/is-workload"
)

// Generate generates the Spec of in. Errors name the file and the field.
func (g *Generator) Generate(ctx context.Context, in Input) (*model.Spec, error) {
	if in.Workspace == nil {
		return nil, fmt.Errorf("%s: no workspace to generate with", in.AppFile)
	}
	if in.Namespace == "" {
		in.Namespace = in.Project
	}
	calls, err := g.plan(in)
	if err != nil {
		return nil, err
	}
	g.run(ctx, calls)
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("generating %s: %w", in.AppFile, err)
	}

	b := &builder{in: in, owner: map[string]string{}, log: g.Logger}
	if b.log == nil {
		b.log = slog.New(slog.DiscardHandler)
	}
	var errs []error
	for i, app := range in.Apps {
		if err := b.app(app, calls[i]); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	imported, err := in.Workspace.ImportedResources(in.Project)
	if err != nil {
		return nil, err
	}
	for _, id := range slices.Sorted(maps.Keys(imported)) {
		if i, ok := b.index(id); ok {
			r := &b.spec.Resources[i]
			if r.Extensions == nil {
				r.Extensions = map[string]any{}
			}
			r.Extensions[model.ImportIDExtension] = imported[id]
		}
	}
	if in.Namespace != in.Project {
		b.spec.Resources = moveNamespace(b.spec.Resources, in.Project, in.Namespace)
	}
	orderByKind(b.spec.Resources)
	b.spec.Context = in.Workspace.Context
	b.spec.SecretStore = in.Workspace.SecretStore
	return normalise(in.AppFile, &b.spec)
}

// call is one module asked for one part of one app.
type call struct {
	part Part
	src  *source
	req  module.Request
	resp *module.Response
	err  error
}

// plan resolves every part's module and encodes its request; it fails
// before any module runs if one is unknown.
func (g *Generator) plan(in Input) ([][]*call, error) {
	ctxYAML, err := encodeValue(in.Workspace.Context)
	if err != nil {
		return nil, fmt.Errorf("%s: context: %w", in.Workspace.Path, err)
	}
	ssYAML, err := encodeValue(in.Workspace.SecretStore)
	if err != nil {
		return nil, fmt.Errorf("%s: secretStore: %w", in.Workspace.Path, err)
	}
	var (
		all  [][]*call
		errs []error
	)
	for _, app := range in.Apps {
		var calls []*call
		var workload []byte
		if app.Workload != nil {
			if workload, err = encodeNode(app.Workload.Node); err != nil {
				return nil, fmt.Errorf("%s: %s.workload: %w", in.AppFile, app.Name, err)
			}
		}
		parts := app.Accessories
		if app.Workload != nil {
			parts = append([]Part{*app.Workload}, parts...)
		}
		for _, p := range parts {
			src, err := g.resolve(in, app, p)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			dev, err := encodeNode(p.Node)
			if err != nil {
				return nil, fmt.Errorf("%s: %s.%s: %w", in.AppFile, app.Name, p.Key, err)
			}
			cfg, _ := in.Workspace.ProjectConfig(p.Module, in.Project)
			platform, err := encodeValue(cfg)
			if err != nil {
				return nil, fmt.Errorf("%s: modules.%s: %w", in.Workspace.Path, p.Module, err)
			}
			calls = append(calls, &call{part: p, src: src, req: module.Request{
				Project: in.Project, Stack: in.Stack, App: app.Name,
				Workload: workload, DevConfig: dev, PlatformConfig: platform,
				Context: ctxYAML, SecretStore: ssYAML,
			}})
		}
		all = append(all, calls)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return all, nil
}

// run calls every module, a few at a time; results stay in their calls.
func (g *Generator) run(ctx context.Context, all [][]*call) {
	n := g.Parallelism
	if n <= 0 {
		n = 8
	}
	var calls errgroup.Group
	calls.SetLimit(n)
	for _, cs := range all {
		for _, c := range cs {
			calls.Go(func() error {
				// Each call keeps its own error: one failing module stops
				// none of the others.
				if c.err = ctx.Err(); c.err == nil {
					c.resp, c.err = g.call(ctx, c)
				}
				return nil
			})
		}
	}
	calls.Wait()
}

func (g *Generator) call(ctx context.Context, c *call) (resp *module.Response, err error) {
	if c.src.builtin == nil {
		return module.Generate(ctx, c.src.binary, c.req, module.Environ(g.ModuleEnv))
	}
	// A built-in module runs in this process: its panic is a bug to
	// report, not a crash of the bot.
	defer func() {
		if r := recover(); r != nil {
			resp, err = nil, fmt.Errorf("panicked: %v", r)
		}
	}()
	return c.src.builtin.Generate(ctx, c.req)
}

// builder assembles the Spec app by app, in Kusion's order.
type builder struct {
	in   Input
	spec model.Spec
	// owner names what generated each resource id, for the message when
	// two parts generate one id differently.
	owner map[string]string
	log   *slog.Logger
}

func (b *builder) index(id string) (int, bool) {
	for i := range b.spec.Resources {
		if b.spec.Resources[i].ID == id {
			return i, true
		}
	}
	return 0, false
}

// add appends r unless the same resource is there already; the same id
// with other content is an error naming both producers.
func (b *builder) add(r model.Resource, by string) error {
	if i, ok := b.index(r.ID); ok {
		if reflect.DeepEqual(b.spec.Resources[i], r) {
			return nil
		}
		return fmt.Errorf("%s: resource %s is generated twice, differently: by %s and by %s", b.in.AppFile, r.ID, b.owner[r.ID], by)
	}
	b.owner[r.ID] = by
	b.spec.Resources = append(b.spec.Resources, r)
	return nil
}

func (b *builder) app(app App, calls []*call) error {
	var errs []error
	for _, c := range calls {
		if c.err != nil {
			errs = append(errs, b.explain(app, c, c.err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	first := len(b.spec.Resources)
	if err := b.add(namespaceResource(b.in.Namespace), "the namespace of "+app.Name); err != nil {
		return err
	}
	if app.Workload != nil {
		secrets, err := workloadSecrets(b.in, app)
		if err != nil {
			return err
		}
		for _, s := range secrets {
			if err := b.add(s, app.Name+".workload.secrets"); err != nil {
				return err
			}
		}
	}

	// The workload first, then what else its module made, then each
	// accessory's resources, in name order.
	workload := -1
	for _, c := range calls {
		if c.resp == nil {
			continue
		}
		by := fmt.Sprintf("%s.%s (%s)", app.Name, c.part.Key, c.src.label)
		rs := c.resp.Resources.DeepCopy()
		if app.Workload != nil && c.part.Key == app.Workload.Key {
			if w := pickWorkload(rs); w >= 0 {
				rs[w].Extensions = withExtension(rs[w].Extensions, isWorkloadExtension, true)
				rs = append(append(model.Resources{rs[w]}, rs[:w]...), rs[w+1:]...)
				workload = len(b.spec.Resources)
			}
		}
		for _, r := range rs {
			if err := b.add(r, by); err != nil {
				return err
			}
		}
	}

	for _, c := range calls {
		if c.resp == nil || c.resp.Patcher == nil {
			continue
		}
		at := fmt.Sprintf("%s: %s.%s (%s)", b.in.AppFile, app.Name, c.part.Key, c.src.label)
		p := c.resp.Patcher
		if wantsWorkload(p) {
			if workload < 0 {
				return fmt.Errorf("%s: asks to patch the workload, but %s has no workload resource to patch", at, app.Name)
			}
			if err := patchWorkload(&b.spec.Resources[workload], p); err != nil {
				return fmt.Errorf("%s: %w", at, err)
			}
		}
		for _, id := range slices.Sorted(maps.Keys(p.JSONPatchers)) {
			i, ok := b.index(id)
			if !ok {
				// Kusion skips a patch of a resource nobody generated; a
				// module may patch what another, absent, module makes.
				b.log.Warn("patch of a resource the spec does not hold skipped", "at", at, "resource", id)
				continue
			}
			if err := jsonPatch(&b.spec.Resources[i], p.JSONPatchers[id]); err != nil {
				return fmt.Errorf("%s: %w", at, err)
			}
		}
	}
	labelApp(b.spec.Resources[first:], app)
	return nil
}

// explain turns a module's error into one naming the file and field.
func (b *builder) explain(app App, c *call, err error) error {
	list, ok := module.ConfigErrors(err)
	if !ok {
		return fmt.Errorf("%s: %s.%s: %s: %w", b.in.AppFile, app.Name, c.part.Key, c.src.label, err)
	}
	ws := b.in.Workspace
	errs := make([]error, 0, len(list))
	for _, ce := range list {
		var file, where string
		line := 0
		switch ce.Source {
		case module.Workload, module.DevConfig:
			node, key := c.part.Node, c.part.Key
			if ce.Source == module.Workload && app.Workload != nil {
				node, key = app.Workload.Node, app.Workload.Key
			}
			file, where = b.in.AppFile, join(app.Name+"."+key, ce.Path)
			line = lineOf(node, ce.Path)
		case module.PlatformConfig:
			top, _, _ := strings.Cut(strings.SplitN(ce.Path, "[", 2)[0], ".")
			file, where = ws.Path, join(ws.ConfigPath(c.part.Module, b.in.Project, top), ce.Path)
		case module.Context:
			file, where = ws.Path, join("context", ce.Path)
		default:
			file, where = b.in.AppFile, app.Name+"."+c.part.Key
		}
		if line > 0 {
			file = fmt.Sprintf("%s:%d", file, line)
		}
		errs = append(errs, fmt.Errorf("%s: %s: %s (%s)", file, where, ce.Msg, c.src.label))
	}
	return errors.Join(errs...)
}

func join(path, sub string) string {
	switch {
	case sub == "":
		return path
	case strings.HasPrefix(sub, "["):
		return path + sub
	}
	return path + "." + sub
}

// pickWorkload finds the workload among what the workload module made, as
// Kusion does: its only resource, or the one it marked.
func pickWorkload(rs model.Resources) int {
	if len(rs) == 1 {
		return 0
	}
	for i, r := range rs {
		switch v := r.Extensions[isWorkloadExtension].(type) {
		case bool:
			if v {
				return i
			}
		case string:
			if v == "true" {
				return i
			}
		}
	}
	return -1
}

func withExtension(ext map[string]any, k string, v any) map[string]any {
	out := make(map[string]any, len(ext)+1)
	for key, val := range ext {
		out[key] = val
	}
	out[k] = v
	return out
}

// namespaceResource is the Namespace every app's objects live in.
func namespaceResource(ns string) model.Resource {
	return model.Resource{
		ID:   model.KubernetesIDOf("v1", "Namespace", "", ns),
		Type: model.Kubernetes,
		Attributes: map[string]any{
			"apiVersion": "v1",
			"kind":       "Namespace",
			"metadata":   map[string]any{"name": ns},
		},
		Extensions: map[string]any{gvkExtension: "/v1, Kind=Namespace"},
	}
}

// labelApp puts the app's labels and annotations on its Kubernetes
// objects, without overriding what a module set; the shared Namespace is
// left alone.
func labelApp(rs []model.Resource, app App) {
	if len(app.Labels) == 0 && len(app.Annotations) == 0 {
		return
	}
	for i := range rs {
		r := &rs[i]
		if r.Type != model.Kubernetes || r.Attributes["kind"] == "Namespace" {
			continue
		}
		meta, _ := r.Attributes["metadata"].(map[string]any)
		if meta == nil {
			continue
		}
		for field, add := range map[string]map[string]string{"labels": app.Labels, "annotations": app.Annotations} {
			if len(add) == 0 {
				continue
			}
			m, _ := meta[field].(map[string]any)
			if m == nil {
				m = map[string]any{}
			}
			for k, v := range add {
				if _, set := m[k]; !set {
					m[k] = v
				}
			}
			meta[field] = m
		}
	}
}

// normalise gives the Spec the form reading it back from a file gives
// (numbers as float64, empty fields as nil), and validates it: a module
// may name a dependency that does not exist.
func normalise(file string, s *model.Spec) (*model.Spec, error) {
	data, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("%s: encoding the generated spec: %w", file, err)
	}
	name := "spec generated from " + file
	out, err := spec.Parse(name, data)
	if err != nil {
		return nil, err
	}
	if err := spec.Validate(name, out); err != nil {
		return nil, err
	}
	return out, nil
}

// encodeNode writes a node as a YAML document of its own: comments
// dropped, aliases expanded (their anchors may lie outside it).
func encodeNode(n *yaml.Node) ([]byte, error) {
	if n == nil {
		return nil, nil
	}
	return yaml.Marshal(plainCopy(n))
}

func plainCopy(n *yaml.Node) *yaml.Node {
	n = resolved(n)
	c := *n
	c.Anchor, c.HeadComment, c.LineComment, c.FootComment = "", "", "", ""
	if len(n.Content) > 0 {
		c.Content = make([]*yaml.Node, len(n.Content))
		for i, x := range n.Content {
			c.Content[i] = plainCopy(x)
		}
	}
	return &c
}

// encodeValue writes a decoded value as YAML (keys sorted); nil is empty.
func encodeValue(v any) ([]byte, error) {
	if v == nil || reflect.ValueOf(v).IsNil() {
		return nil, nil
	}
	return yaml.Marshal(v)
}

// lineOf finds the line of path (a.b[0].c) below n, 0 if it is not there.
func lineOf(n *yaml.Node, path string) int {
	n = resolved(n)
	if n == nil {
		return 0
	}
	line := n.Line
	for _, seg := range splitPath(path) {
		n = resolved(n)
		switch {
		case seg.index >= 0:
			if n.Kind != yaml.SequenceNode || seg.index >= len(n.Content) {
				return line
			}
			n = n.Content[seg.index]
		default:
			if n.Kind != yaml.MappingNode {
				return line
			}
			var next *yaml.Node
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == seg.key {
					next = n.Content[i+1]
					line = n.Content[i].Line
				}
			}
			if next == nil {
				return line
			}
			n = next
			continue
		}
		line = resolved(n).Line
	}
	return line
}

type segment struct {
	key   string
	index int
}

func splitPath(path string) []segment {
	var out []segment
	for _, part := range strings.Split(path, ".") {
		if part == "" {
			continue
		}
		key, rest, _ := strings.Cut(part, "[")
		if key != "" {
			out = append(out, segment{key: key, index: -1})
		}
		for rest != "" {
			num, after, _ := strings.Cut(rest, "]")
			i := 0
			for _, ch := range num {
				if ch < '0' || ch > '9' {
					i = -1
					break
				}
				i = i*10 + int(ch-'0')
			}
			if i >= 0 {
				out = append(out, segment{index: i})
			}
			rest = strings.TrimPrefix(after, "[")
		}
	}
	return out
}
