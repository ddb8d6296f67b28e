package generate

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/kusionpr/kusionpr/engine/generate/module"
)

// source is where a part's module runs: in this process or as a binary.
type source struct {
	builtin module.Generator
	binary  string
	// label names it in messages: "built-in module mysql", or
	// "module acme/cache@1.2.0".
	label string
}

// catalogNamespace is the KusionStack catalog's: a workspace pointing a
// module there (oci://ghcr.io/kusionstack/network) gets the built-in of
// that name, which carries the catalog's meaning and needs no download.
const catalogNamespace = "kusionstack"

// resolve finds the module of one part: the workspace's module of that name
// if it names a binary outside the catalog, else the built-in one.
func (g *Generator) resolve(in Input, app App, p Part) (*source, error) {
	mc := in.Workspace.Modules[p.Module]
	if mc != nil && mc.Path != "" && !isCatalog(mc.Path, p.Module) {
		key := mc.Path + "@" + mc.Version
		bin, err := module.Find(g.ModuleHome, mc.Path, mc.Version)
		if err != nil {
			return nil, fmt.Errorf("%s: modules.%s: %w (used by %s: %s.%s)", in.Workspace.Path, p.Module, err, in.AppFile, app.Name, p.Key)
		}
		return &source{binary: bin, label: "module " + trimScheme(key)}, nil
	}
	if b, ok := g.Builtins[p.Module]; ok {
		return &source{builtin: b, label: "built-in module " + p.Module}, nil
	}
	return nil, fmt.Errorf("%s: %s.%s._type: unknown module %q: workspace %s (%s) declares no module of that name, and none is built in (built in: %s)",
		in.AppFile, app.Name, p.Key, p.Module, in.Workspace.Name, in.Workspace.Path, strings.Join(slices.Sorted(maps.Keys(g.Builtins)), ", "))
}

// isCatalog says whether path is the catalog's module of that name.
func isCatalog(path, name string) bool {
	p := strings.TrimSuffix(strings.TrimSuffix(trimScheme(path), "/"), ".git")
	parts := strings.Split(p, "/")
	return len(parts) >= 2 && parts[len(parts)-2] == catalogNamespace && parts[len(parts)-1] == name
}

func trimScheme(s string) string {
	if _, after, ok := strings.Cut(s, "://"); ok {
		return after
	}
	return s
}
