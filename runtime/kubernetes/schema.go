package kubernetes

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/openapi"
	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// The schema check. For an object whose namespace does not exist yet, the
// API server's server-side apply makes its typed conversion of the object
// first, and so refuses a wrong type or an unknown field ("failed to create
// typed patch object ... .spec.replicas: expected numeric (int or float),
// got string"), then finds the namespace missing before its validation
// runs. What the validation would refuse for want of a field is checked
// here instead, against the schema the server publishes (its OpenAPI v3,
// one document per group-version): the fields the schema requires. What
// only the live namespace can tell (admission webhooks, quotas,
// LimitRanges) and the server's validation beyond its schema are left to
// the apply.

// serverFills names the fields (model.field) that built-in schemas mark
// required but the API server accepts missing: it defaults them, or no
// longer needs them. TestIntegrationSchemaAgreesWithServer holds this list
// to the test cluster's answers.
var serverFills = map[string]bool{
	"io.k8s.api.rbac.v1.RoleRef.apiGroup":                    true,
	"io.k8s.api.apps.v1.StatefulSetSpec.serviceName":         true,
	"io.k8s.api.networking.v1.NetworkPolicySpec.podSelector": true,
}

// openAPISchemas fetches and parses the OpenAPI v3 documents the API
// server publishes, each once, on first use. It is safe for concurrent
// use; a fetch that fails is tried again by the next check.
type openAPISchemas struct {
	client openapi.Client

	mu sync.Mutex
	// paths lists the documents by path ("api/v1", "apis/apps/v1"); it is
	// read again when it lacks a group-version (a CRD installed since),
	// once per group-version it lacks.
	paths  map[string]openapi.GroupVersion
	lacked map[string]bool
	// docs holds each document by its server-relative address, which
	// carries the document's hash: a changed schema is another address.
	docs map[string]*openAPIDoc
}

// openAPIDoc is one group-version's parsed document.
type openAPIDoc struct {
	ready chan struct{}
	err   error
	defs  map[string]*spec.Schema
	// kinds names each kind's schema in defs.
	kinds map[schema.GroupVersionKind]string
}

func newOpenAPISchemas(c openapi.Client) *openAPISchemas {
	return &openAPISchemas{client: c, lacked: map[string]bool{}, docs: map[string]*openAPIDoc{}}
}

// check returns the fields obj lacks that the schema of gvk requires, in
// the API server's words (".spec.selector: Required value"), or found
// false when the server publishes no schema for gvk.
func (s *openAPISchemas) check(gvk schema.GroupVersionKind, obj map[string]any) (problems []string, found bool, err error) {
	doc, err := s.doc(gvk.GroupVersion())
	if err != nil || doc == nil {
		return nil, false, err
	}
	name, ok := doc.kinds[gvk]
	if !ok {
		return nil, false, nil
	}
	root := spec.Schema{SchemaProps: spec.SchemaProps{Ref: spec.MustCreateRef("#/components/schemas/" + name)}}
	doc.required("", obj, &root, &problems)
	return problems, true, nil
}

// gvPath is where OpenAPI v3 publishes a group-version's document.
func gvPath(gv schema.GroupVersion) string {
	if gv.Group == "" {
		return "api/" + gv.Version
	}
	return "apis/" + gv.Group + "/" + gv.Version
}

// doc returns gv's document, nil when the server publishes none.
func (s *openAPISchemas) doc(gv schema.GroupVersion) (*openAPIDoc, error) {
	path := gvPath(gv)
	s.mu.Lock()
	if _, ok := s.paths[path]; !ok && (s.paths == nil || !s.lacked[path]) {
		paths, err := s.client.Paths()
		if err != nil && !apierrors.IsNotFound(err) {
			s.mu.Unlock()
			return nil, fmt.Errorf("list the API server's OpenAPI v3 documents: %w", err)
		}
		if paths == nil {
			paths = map[string]openapi.GroupVersion{} // a server that publishes none
		}
		s.paths = paths
		if _, ok := paths[path]; !ok {
			s.lacked[path] = true
		}
	}
	src, ok := s.paths[path]
	if !ok {
		s.mu.Unlock()
		return nil, nil
	}
	key := src.ServerRelativeURL()
	d, found := s.docs[key]
	if !found {
		d = &openAPIDoc{ready: make(chan struct{})}
		s.docs[key] = d
	}
	s.mu.Unlock()
	if found {
		<-d.ready
		return d, d.err
	}
	d.err = d.load(src)
	if d.err != nil {
		d.err = fmt.Errorf("read the API server's OpenAPI v3 document %s: %w", path, d.err)
		s.mu.Lock()
		delete(s.docs, key)
		s.mu.Unlock()
	}
	close(d.ready)
	return d, d.err
}

func (d *openAPIDoc) load(src openapi.GroupVersion) error {
	b, err := src.Schema("application/json")
	if err != nil {
		return err
	}
	var doc spec3.OpenAPI
	if err := json.Unmarshal(b, &doc); err != nil {
		return err
	}
	if doc.Components == nil {
		return errors.New("no components")
	}
	d.defs = doc.Components.Schemas
	d.kinds = map[schema.GroupVersionKind]string{}
	for name, def := range d.defs {
		gvks, _ := def.Extensions["x-kubernetes-group-version-kind"].([]any)
		for _, g := range gvks {
			m, _ := g.(map[string]any)
			group, _ := m["group"].(string)
			version, _ := m["version"].(string)
			kind, _ := m["kind"].(string)
			if kind != "" {
				d.kinds[schema.GroupVersionKind{Group: group, Version: version, Kind: kind}] = name
			}
		}
	}
	return nil
}

// resolve follows s's reference, given directly or as the one member of
// allOf (as the published documents refer to a type), and returns the
// schema with the name of the model it is, "" for an inline one.
func (d *openAPIDoc) resolve(s *spec.Schema) (*spec.Schema, string) {
	name := ""
	for range 8 { // a chain of references longer than this is no type
		switch {
		case s.Ref.String() != "":
			ref := s.Ref.String()
			name = ref[strings.LastIndex(ref, "/")+1:]
			def, ok := d.defs[name]
			if !ok {
				return &spec.Schema{}, ""
			}
			s = def
		case len(s.AllOf) == 1 && len(s.Properties) == 0:
			s = &s.AllOf[0]
		default:
			return s, name
		}
	}
	return s, name
}

// required adds to problems the fields v (at path) lacks that s requires,
// worded as the API server's validation words them, and looks into the
// fields v has. A field whose schema gives a default is not lacking,
// unless that default is its type's zero value: built-in schemas give
// such defaults for what a missing field decodes to, and the server's
// validation refuses it all the same.
func (d *openAPIDoc) required(path string, v any, s *spec.Schema, problems *[]string) {
	s, name := d.resolve(s)
	switch t := v.(type) {
	case map[string]any:
		if len(s.Properties) > 0 {
			var lacking []string
			for _, f := range s.Required {
				// A null is no value: server-side apply removes the field.
				if t[f] != nil || serverFills[name+"."+f] {
					continue
				}
				if p, ok := s.Properties[f]; ok && !isZero(p.Default) {
					continue
				}
				lacking = append(lacking, f)
			}
			slices.Sort(lacking)
			for _, f := range lacking {
				*problems = append(*problems, path+"."+f+": Required value")
			}
			for _, k := range slices.Sorted(maps.Keys(t)) {
				if p, ok := s.Properties[k]; ok {
					d.required(path+"."+k, t[k], &p, problems)
				}
			}
			return
		}
		if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
			for _, k := range slices.Sorted(maps.Keys(t)) {
				d.required(path+"."+k, t[k], s.AdditionalProperties.Schema, problems)
			}
		}
	case []any:
		if s.Items != nil && s.Items.Schema != nil {
			for i, e := range t {
				d.required(fmt.Sprintf("%s[%d]", path, i), e, s.Items.Schema, problems)
			}
		}
	}
}

// isZero reports whether a schema's default is absent or its type's zero value.
func isZero(v any) bool {
	switch t := v.(type) {
	case nil:
		return true
	case string:
		return t == ""
	case bool:
		return !t
	case float64:
		return t == 0
	case int64:
		return t == 0
	case json.Number:
		return t.String() == "0"
	case map[string]any:
		return len(t) == 0
	case []any:
		return len(t) == 0
	}
	return false
}
