package generate

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/kusionpr/kusionpr/engine/generate/strict"
)

// Workspace is what platform engineers give every stack of an environment,
// in Kusion's shape (api.kusion.io/v1 Workspace): module configurations,
// the context (kubeconfig, cloud settings) and the secret store.
type Workspace struct {
	// Name is the file's name without .yaml, as Kusion names a workspace.
	Name string
	// Path is the file, for messages.
	Path        string
	Modules     map[string]*ModuleConfig
	Context     map[string]any
	SecretStore map[string]any
}

// ModuleConfig is one module of a workspace: where its binary comes from and
// its platform configuration, a default block and named blocks that apply
// to the projects their projectSelector lists.
type ModuleConfig struct {
	Path    string
	Version string
	Default map[string]any
	// Blocks are the named blocks, in name order.
	Blocks []Block
}

// Block is a named block of a module's configs.
type Block struct {
	Name            string
	ProjectSelector []string
	Config          map[string]any
}

type workspaceFile struct {
	// Name is optional; Kusion takes a workspace's name from its storage.
	Name        string                   `json:"name,omitempty"`
	Modules     map[string]*moduleConfig `json:"modules,omitempty"`
	Context     map[string]any           `json:"context,omitempty"`
	SecretStore map[string]any           `json:"secretStore,omitempty"`
}

type moduleConfig struct {
	Path    string                `json:"path,omitempty"`
	Version string                `json:"version,omitempty"`
	Configs map[string]*yaml.Node `json:"configs,omitempty"`
}

const (
	defaultBlock         = "default"
	projectSelectorField = "projectSelector"
	// importedResourcesField maps resource ids to the ids of existing
	// objects to adopt, in any module's platform configuration.
	importedResourcesField = "importedResources"
)

// LoadWorkspace reads the workspace file at path; its name is the file's
// name without the extension.
func LoadWorkspace(path string) (*Workspace, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading workspace: %w", err)
	}
	name := strings.TrimSuffix(strings.TrimSuffix(filepath.Base(path), ".yaml"), ".yml")
	return ParseWorkspace(path, name, data)
}

// ParseWorkspace reads a workspace document; file prefixes every message.
// It checks what Kusion's ValidateWorkspace checks, and says where.
func ParseWorkspace(file, name string, data []byte) (*Workspace, error) {
	root, err := strict.Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	var raw workspaceFile
	if err := strict.Decode(root, "", &raw); err != nil {
		return nil, fileErrors(file, err)
	}
	if raw.Name != "" && raw.Name != name {
		return nil, fmt.Errorf("%s: name: %q, but the file names workspace %q", file, raw.Name, name)
	}
	ws := &Workspace{Name: name, Path: file, Context: raw.Context, SecretStore: raw.SecretStore, Modules: map[string]*ModuleConfig{}}
	var errs []error
	for _, mod := range slices.Sorted(maps.Keys(raw.Modules)) {
		mc, err := parseModule(file, mod, raw.Modules[mod])
		if err != nil {
			errs = append(errs, err)
			continue
		}
		ws.Modules[mod] = mc
	}
	if err := checkProjectsOnce(file, ws); err != nil {
		errs = append(errs, err)
	}
	if err := checkSecretStore(file, raw.SecretStore); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return ws, nil
}

func parseModule(file, name string, raw *moduleConfig) (*ModuleConfig, error) {
	where := "modules." + name
	if raw == nil {
		return nil, fmt.Errorf("%s: %s: empty: want path, version and configs", file, where)
	}
	mc := &ModuleConfig{Path: raw.Path, Version: raw.Version}
	switch {
	case raw.Path == "" && raw.Version != "":
		return nil, fmt.Errorf("%s: %s.path: required with %s.version: where the module comes from (oci://ghcr.io/<org>/<name>)", file, where, where)
	case raw.Version == "" && raw.Path != "":
		return nil, fmt.Errorf("%s: %s.version: required with %s.path", file, where, where)
	}
	var errs []error
	for _, block := range slices.Sorted(maps.Keys(raw.Configs)) {
		at := where + ".configs." + block
		var cfg map[string]any
		if err := strict.Decode(raw.Configs[block], at, &cfg); err != nil {
			errs = append(errs, fileErrors(file, err))
			continue
		}
		if block == defaultBlock {
			if _, ok := cfg[projectSelectorField]; ok {
				errs = append(errs, fmt.Errorf("%s: %s.%s: not allowed in the default block, which applies to every project", file, at, projectSelectorField))
				continue
			}
			mc.Default = cfg
			continue
		}
		b := Block{Name: block, Config: map[string]any{}}
		for k, v := range cfg {
			if k != projectSelectorField {
				b.Config[k] = v
			}
		}
		sel, ok := cfg[projectSelectorField].([]any)
		if !ok || len(sel) == 0 {
			errs = append(errs, fmt.Errorf("%s: %s.%s: required: the projects this block applies to", file, at, projectSelectorField))
			continue
		}
		if len(b.Config) == 0 {
			errs = append(errs, fmt.Errorf("%s: %s: a block with nothing but its projectSelector", file, at))
			continue
		}
		for i, p := range sel {
			s, isString := p.(string)
			switch {
			case !isString || s == "":
				errs = append(errs, fmt.Errorf("%s: %s.%s[%d]: want a project name", file, at, projectSelectorField, i))
			case slices.Contains(b.ProjectSelector, s):
				errs = append(errs, fmt.Errorf("%s: %s.%s: project %q given twice", file, at, projectSelectorField, s))
			default:
				b.ProjectSelector = append(b.ProjectSelector, s)
			}
		}
		mc.Blocks = append(mc.Blocks, b)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return mc, nil
}

// checkProjectsOnce: a project selected by two blocks of one module would
// get one of them by chance.
func checkProjectsOnce(file string, ws *Workspace) error {
	var errs []error
	for _, mod := range slices.Sorted(maps.Keys(ws.Modules)) {
		owner := map[string]string{}
		for _, b := range ws.Modules[mod].Blocks {
			for _, p := range b.ProjectSelector {
				if prev, ok := owner[p]; ok {
					errs = append(errs, fmt.Errorf("%s: modules.%s.configs: project %q is selected by both %s and %s; a project may be in one block's projectSelector only", file, mod, p, prev, b.Name))
					continue
				}
				owner[p] = b.Name
			}
		}
	}
	return errors.Join(errs...)
}

// secretStoreProviders are the providers Kusion's secret store knows; one
// must be given.
var secretStoreProviders = []string{"alicloud", "aws", "azure", "fake", "onpremises", "vault", "viettelcloud"}

func checkSecretStore(file string, ss map[string]any) error {
	if ss == nil {
		return nil
	}
	provider, ok := ss["provider"].(map[string]any)
	if !ok {
		return fmt.Errorf("%s: secretStore.provider: required: a mapping with one of %s", file, strings.Join(secretStoreProviders, ", "))
	}
	var given []string
	for k := range provider {
		if !slices.Contains(secretStoreProviders, k) {
			return fmt.Errorf("%s: secretStore.provider.%s: unknown provider (want one of %s)", file, k, strings.Join(secretStoreProviders, ", "))
		}
		given = append(given, k)
	}
	sort.Strings(given)
	if len(given) != 1 {
		return fmt.Errorf("%s: secretStore.provider: want exactly one provider, got %d (%s)", file, len(given), strings.Join(given, ", "))
	}
	return nil
}

// ProjectConfig is the platform configuration of module mod for project, as
// Kusion resolves it: the default block, with the keys of the block whose
// projectSelector lists the project laid over it (one level deep). block
// names that block, "" if none applies. A module the workspace does not
// configure, or whose configuration comes out empty, has none (nil).
func (ws *Workspace) ProjectConfig(mod, project string) (cfg map[string]any, block string) {
	mc := ws.Modules[mod]
	if mc == nil {
		return nil, ""
	}
	cfg = map[string]any{}
	for k, v := range mc.Default {
		cfg[k] = v
	}
	for _, b := range mc.Blocks {
		if slices.Contains(b.ProjectSelector, project) {
			for k, v := range b.Config {
				cfg[k] = v
			}
			block = b.Name
			break
		}
	}
	if len(cfg) == 0 {
		return nil, block
	}
	return cfg, block
}

// ConfigPath names, for messages, where key of module mod's configuration
// for project is written: in the project's named block if that block sets
// it, else in the default block.
func (ws *Workspace) ConfigPath(mod, project, key string) string {
	base := "modules." + mod + ".configs."
	if mc := ws.Modules[mod]; mc != nil {
		for _, b := range mc.Blocks {
			if slices.Contains(b.ProjectSelector, project) {
				if _, ok := b.Config[key]; ok {
					return base + b.Name
				}
			}
		}
	}
	return base + defaultBlock
}

// ImportedResources merges every module's importedResources for project:
// resource id → the id of the existing object to adopt.
func (ws *Workspace) ImportedResources(project string) (map[string]string, error) {
	out := map[string]string{}
	for _, mod := range slices.Sorted(maps.Keys(ws.Modules)) {
		cfg, _ := ws.ProjectConfig(mod, project)
		raw, ok := cfg[importedResourcesField]
		if !ok {
			continue
		}
		where := fmt.Sprintf("%s: %s.%s", ws.Path, ws.ConfigPath(mod, project, importedResourcesField), importedResourcesField)
		m, isMap := raw.(map[string]any)
		if !isMap {
			return nil, fmt.Errorf("%s: want a mapping of resource id to the id of the object to import", where)
		}
		for _, id := range slices.Sorted(maps.Keys(m)) {
			importID, isString := m[id].(string)
			if !isString || importID == "" {
				return nil, fmt.Errorf("%s.%s: want the id of the object to import, a string", where, id)
			}
			if prev, dup := out[id]; dup && prev != importID {
				return nil, fmt.Errorf("%s.%s: imports %q, but another module imports %q for the same resource", where, id, importID, prev)
			}
			out[id] = importID
		}
	}
	return out, nil
}
