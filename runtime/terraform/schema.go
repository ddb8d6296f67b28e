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
)

// resourceSchema is what the runtime needs of a provider's schema for one
// resource type.
type resourceSchema struct {
	// Version is the schema version a state instance records.
	Version uint64 `json:"version"`
	// Sensitive lists the sensitive attribute paths ("*" for any list item).
	Sensitive []string `json:"sensitive,omitempty"`
}

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

// of returns the schema of t's resource type.
func (s *schemas) of(ctx context.Context, t target) (resourceSchema, error) {
	if t.builtin() {
		// terraform_data: schema version 0, nothing sensitive.
		return resourceSchema{}, nil
	}
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

	sum := sha256.Sum256([]byte(key))
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
	return types, nil
}

func (s *schemas) fetch(ctx context.Context, t target, key string) (map[string]resourceSchema, error) {
	config, err := t.configuration(nil, false, "")
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
		out[name] = resourceSchema{Version: rs.Version, Sensitive: paths}
	}
	return out
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
