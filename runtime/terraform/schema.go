package terraform

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"sync"

	tfjson "github.com/hashicorp/terraform-json"
	"github.com/zclconf/go-cty/cty"
)

// resourceSchema is what the runtime needs of a provider's schema for one
// resource type.
type resourceSchema struct {
	// Version is the schema version a state instance records.
	Version uint64 `json:"version"`
	// Sensitive lists the sensitive attribute paths ("*" for any list item).
	Sensitive []string `json:"sensitive,omitempty"`
	// Type is the type of the resource's object, as Terraform derives it
	// from the schema: what a state file's attributes are encoded with.
	// cty.NilType when not fetched (the built-in provider's, until needed).
	Type cty.Type `json:"type"`
}

// schemaCacheFormat names what a cached schema file holds: files of
// another format (without Type) are fetched again.
const schemaCacheFormat = "2"

// schemas caches provider schemas in memory and on disk: fetching one is an
// init and a `providers schema -json`, done once per provider version.
type schemas struct {
	folders *folders

	mu    sync.Mutex
	cache map[string]map[string]resourceSchema
	busy  map[string]*sync.Mutex
}

func newSchemas(f *folders) *schemas {
	return &schemas{folders: f, cache: map[string]map[string]resourceSchema{}, busy: map[string]*sync.Mutex{}}
}

// of returns the schema of t's resource type. That of the built-in
// provider (terraform_data: schema version 0, nothing sensitive) is known
// without asking Terraform; its Type is that of Terraform 1.x, enough to
// read a state file (moduleState.shown refuses an attribute it lacks), while
// rebuilding a state takes the binary's own: see typed.
func (s *schemas) of(ctx context.Context, t target) (resourceSchema, error) {
	if t.builtin() {
		if t.resourceType == builtinResourceType {
			return resourceSchema{Type: builtinDataType}, nil
		}
		return resourceSchema{}, nil
	}
	return s.fetched(ctx, t)
}

// builtinDataType is terraform_data's object type in Terraform 1.4 and
// later and in OpenTofu.
var builtinDataType = cty.Object(map[string]cty.Type{
	"id":               cty.String,
	"input":            cty.DynamicPseudoType,
	"output":           cty.DynamicPseudoType,
	"triggers_replace": cty.DynamicPseudoType,
})

// typed returns the schema of t's resource type with its Type, which only
// rebuilding a state from recorded attributes needs: for the built-in
// provider it costs an init and a `providers schema`, once per binary.
func (s *schemas) typed(ctx context.Context, t target) (resourceSchema, error) {
	rs, err := s.fetched(ctx, t)
	if err == nil && rs.Type == cty.NilType {
		err = fmt.Errorf("schema of provider %s: no type for %q", t.source, t.resourceType)
	}
	return rs, err
}

func (s *schemas) fetched(ctx context.Context, t target) (resourceSchema, error) {
	key := t.providerKey(s.folders.cfg.Binary)
	types, err := s.provider(ctx, t, key)
	if err != nil {
		return resourceSchema{}, err
	}
	rs, ok := types[t.resourceType]
	if !ok {
		return resourceSchema{}, fmt.Errorf("provider %s has no resource type %q", t.source, t.resourceType)
	}
	return rs, nil
}

func (s *schemas) provider(ctx context.Context, t target, key string) (map[string]resourceSchema, error) {
	s.mu.Lock()
	if types, ok := s.cache[key]; ok {
		s.mu.Unlock()
		return types, nil
	}
	busy, ok := s.busy[key]
	if !ok {
		busy = &sync.Mutex{}
		s.busy[key] = busy
	}
	s.mu.Unlock()
	busy.Lock()
	defer busy.Unlock()
	s.mu.Lock()
	types, ok := s.cache[key]
	s.mu.Unlock()
	if ok {
		return types, nil
	}

	sum := sha256.Sum256([]byte(schemaCacheFormat + "|" + key))
	path := filepath.Join(s.folders.cfg.CacheDir, "schemas", hex.EncodeToString(sum[:10])+".json")
	types, err := readSchemas(path)
	if err != nil {
		types, err = s.fetch(ctx, t, key)
		if err != nil {
			return nil, fmt.Errorf("schema of provider %s: %w", t.source, err)
		}
		b, _ := json.Marshal(types)
		if err := writeFile(path, b); err != nil {
			return nil, err
		}
	}
	s.mu.Lock()
	s.cache[key] = types
	s.mu.Unlock()
	return types, nil
}

func readSchemas(path string) (map[string]resourceSchema, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var types map[string]resourceSchema
	if err := json.Unmarshal(b, &types); err != nil || types == nil {
		return nil, fs.ErrNotExist
	}
	for _, rs := range types {
		if rs.Type == cty.NilType {
			return nil, fs.ErrNotExist
		}
	}
	return types, nil
}

func (s *schemas) fetch(ctx context.Context, t target, key string) (map[string]resourceSchema, error) {
	// `providers schema` lists the providers the configuration needs: the
	// built-in one only when a resource of it is there.
	config, err := t.configuration(map[string]any{}, t.builtin(), "")
	if err != nil {
		return nil, err
	}
	var out map[string]resourceSchema
	err = s.folders.with(ctx, "schema|"+key, config, nil, func(w *workdir) error {
		if err := s.folders.init(ctx, w, key); err != nil {
			return err
		}
		ps, err := w.tf.ProvidersSchema(ctx)
		if err != nil {
			return fmt.Errorf("providers schema: %w", err)
		}
		out = resourceSchemas(ps, t.source)
		if out == nil {
			return errors.New("not in the output of providers schema")
		}
		return nil
	})
	return out, err
}

func resourceSchemas(ps *tfjson.ProviderSchemas, source string) map[string]resourceSchema {
	p, ok := ps.Schemas[source]
	if !ok {
		return nil
	}
	out := map[string]resourceSchema{}
	for name, rs := range p.ResourceSchemas {
		var paths []string
		if rs.Block != nil {
			paths = sensitiveInBlock(rs.Block, "")
		}
		sort.Strings(paths)
		out[name] = resourceSchema{Version: rs.Version, Sensitive: paths, Type: blockType(rs.Block)}
	}
	return out
}

// blockType is the type of the object a block makes, as Terraform's
// configschema derives it: a nested block type whose content has a dynamic
// type (terraform_data's input, for one) makes a list or a map whose
// items may differ in type, which Terraform types as dynamic.
func blockType(b *tfjson.SchemaBlock) cty.Type {
	if b == nil {
		return cty.EmptyObject
	}
	attrs := map[string]cty.Type{}
	for name, a := range b.Attributes {
		attrs[name] = attributeType(a)
	}
	for name, nb := range b.NestedBlocks {
		bt := blockType(nb.Block)
		switch nb.NestingMode {
		case tfjson.SchemaNestingModeList:
			if bt.HasDynamicTypes() {
				bt = cty.DynamicPseudoType
			} else {
				bt = cty.List(bt)
			}
		case tfjson.SchemaNestingModeSet:
			bt = cty.Set(bt)
		case tfjson.SchemaNestingModeMap:
			if bt.HasDynamicTypes() {
				bt = cty.DynamicPseudoType
			} else {
				bt = cty.Map(bt)
			}
		}
		attrs[name] = bt
	}
	return cty.Object(attrs)
}

func attributeType(a *tfjson.SchemaAttribute) cty.Type {
	nt := a.AttributeNestedType
	if nt == nil {
		if a.AttributeType == cty.NilType {
			return cty.DynamicPseudoType
		}
		return a.AttributeType
	}
	attrs := map[string]cty.Type{}
	for name, x := range nt.Attributes {
		attrs[name] = attributeType(x)
	}
	ot := cty.Object(attrs)
	switch nt.NestingMode {
	case tfjson.SchemaNestingModeList:
		return cty.List(ot)
	case tfjson.SchemaNestingModeSet:
		return cty.Set(ot)
	case tfjson.SchemaNestingModeMap:
		return cty.Map(ot)
	}
	return ot
}

func sensitiveInBlock(b *tfjson.SchemaBlock, prefix string) []string {
	var out []string
	for name, a := range b.Attributes {
		if a.Sensitive {
			out = append(out, prefix+name)
			continue
		}
		if nt := a.AttributeNestedType; nt != nil {
			out = append(out, sensitiveInNested(nt, prefix+name)...)
		}
	}
	for name, nb := range b.NestedBlocks {
		if nb.Block == nil {
			continue
		}
		p := prefix + name + "."
		if nb.NestingMode != tfjson.SchemaNestingModeSingle && nb.NestingMode != tfjson.SchemaNestingModeGroup {
			p += "*."
		}
		out = append(out, sensitiveInBlock(nb.Block, p)...)
	}
	return out
}

func sensitiveInNested(nt *tfjson.SchemaNestedAttributeType, path string) []string {
	p := path + "."
	if nt.NestingMode != tfjson.SchemaNestingModeSingle {
		p += "*."
	}
	var out []string
	for name, a := range nt.Attributes {
		if a.Sensitive {
			out = append(out, p+name)
		} else if a.AttributeNestedType != nil {
			out = append(out, sensitiveInNested(a.AttributeNestedType, p+name)...)
		}
	}
	return out
}
