// Package builtin holds the modules that run inside the generator instead of
// as plugin binaries: service, job, network, opsrule, mysql and postgres.
// They mean what the KusionStack catalog modules of the same names mean, so
// a stack written for Kusion generates the same resources here, with three
// differences that matter to a reviewer:
//
//   - every input is decoded strictly, and every mistake comes back as a
//     module.ConfigError naming the field, so the generator can point at the
//     line of the file to change instead of a module's free-form message;
//   - the output is deterministic: no map is walked unsorted, nothing is
//     random, nothing depends on the time or the environment (the catalog
//     reads the cloud region from environment variables; here it comes from
//     the workspace);
//   - Kubernetes objects carry only the fields that mean something, so that
//     server-side apply and the three-way diff do not see fields the server
//     would drop (creationTimestamp: null, status: {}).
package builtin

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kusionpr/kusionpr/engine/generate/module"
	"github.com/kusionpr/kusionpr/engine/generate/strict"
	"github.com/kusionpr/kusionpr/model"
)

// Modules returns the built-in modules by name.
func Modules() map[string]module.Generator {
	return map[string]module.Generator{
		"service":  serviceModule{},
		"job":      jobModule{},
		"network":  networkModule{},
		"opsrule":  opsRuleModule{},
		"mysql":    databaseModule{engine: mysqlEngine()},
		"postgres": databaseModule{engine: postgresEngine()},
	}
}

const (
	// isWorkloadKey marks the resource Kusion patches with the accessories'
	// environment variables, labels and annotations.
	isWorkloadKey = "kusion.io/is-workload"
	// maxDNSLabel is the longest name Kubernetes accepts where it wants a DNS
	// label: container, volume and Service port names, label values.
	maxDNSLabel = 63
)

// uniqueName is the name every resource of an app's workload shares. The
// stack is in it because two stacks of a project deploy to one namespace.
func uniqueName(req module.Request) string {
	return req.Project + "-" + req.Stack + "-" + req.App
}

// uniqueLabels select an app's pods. The stack is not in them, as in Kusion:
// changing it would change every existing selector, which is immutable.
func uniqueLabels(req module.Request) map[string]string {
	return map[string]string{
		"app.kubernetes.io/part-of": req.Project,
		"app.kubernetes.io/name":    req.App,
	}
}

// mergeStrings returns the union of maps, later ones winning.
func mergeStrings(ms ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range ms {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

// anyMap turns a string map into an attribute map, nil when empty so that the
// caller can leave the field out. Attribute trees hold only map[string]any
// and []any, which is what model.DeepCopyValue copies.
func anyMap(m map[string]string) map[string]any {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]any, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out[k] = m[k]
	}
	return out
}

func anyList(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

// gvkString prints a group/version and kind as k8s GroupVersionKind.String()
// does, which is what Kusion stores in the GVK extension.
func gvkString(apiVersion, kind string) string {
	if !strings.Contains(apiVersion, "/") {
		apiVersion = "/" + apiVersion
	}
	return apiVersion + ", Kind=" + kind
}

// objectMeta is the part of an object's metadata the modules set.
type objectMeta struct {
	name, namespace string
	labels          map[string]string
	annotations     map[string]string
}

func (m objectMeta) attributes() map[string]any {
	out := map[string]any{"name": m.name}
	if m.namespace != "" {
		out["namespace"] = m.namespace
	}
	if l := anyMap(m.labels); l != nil {
		out["labels"] = l
	}
	if a := anyMap(m.annotations); a != nil {
		out["annotations"] = a
	}
	return out
}

// kubeResource wraps a Kubernetes object. body holds the fields besides
// apiVersion, kind and metadata (spec, data, ...), and becomes the attributes.
func kubeResource(apiVersion, kind string, meta objectMeta, body map[string]any) model.Resource {
	if body == nil {
		body = map[string]any{}
	}
	body["apiVersion"] = apiVersion
	body["kind"] = kind
	body["metadata"] = meta.attributes()
	return model.Resource{
		ID:         model.KubernetesIDOf(apiVersion, kind, meta.namespace, meta.name),
		Type:       model.Kubernetes,
		Attributes: body,
		Extensions: map[string]any{"GVK": gvkString(apiVersion, kind)},
	}
}

// tfProvider is a Terraform provider as Kusion's module framework names it.
type tfProvider struct {
	namespace, name, version string
}

// id is Kusion's Terraform resource id.
func (p tfProvider) id(resourceType, name string) string {
	return p.namespace + ":" + p.name + ":" + resourceType + ":" + name
}

// resource wraps a Terraform resource; region "" means the provider needs no
// provider block (random), and then there is no providerMeta at all.
func (p tfProvider) resource(resourceType, name, region string, attrs map[string]any, dependsOn []string) model.Resource {
	ext := map[string]any{
		"provider":     "registry.terraform.io/" + p.namespace + "/" + p.name + "/" + p.version,
		"resourceType": resourceType,
	}
	if region != "" {
		ext["providerMeta"] = map[string]any{"region": region}
	}
	return model.Resource{
		ID:         p.id(resourceType, name),
		Type:       model.Terraform,
		Attributes: attrs,
		DependsOn:  dependsOn,
		Extensions: ext,
	}
}

// kusionPath refers to another resource's attribute; Kusion resolves it at
// apply time and orders the two resources by it.
func kusionPath(id, attribute string) string {
	return "$kusion_path." + id + "." + attribute
}

// empty says whether a YAML input holds nothing, as an absent one does.
func empty(b []byte) bool {
	node, err := strict.Parse(b)
	if err != nil {
		return len(bytes.TrimSpace(b)) == 0
	}
	return node.Kind == yaml.ScalarNode && node.ShortTag() == "!!null"
}

// decodeNode decodes a part of an input strictly, reporting paths within the
// whole input (path is where node sits in it).
func decodeNode(src module.Source, node *yaml.Node, path string, out any) error {
	if node == nil {
		return nil
	}
	err := strict.Decode(node, path, out)
	if err == nil {
		return nil
	}
	list := strict.Errors(err)
	errs := make([]error, len(list))
	for i, e := range list {
		errs[i] = &module.ConfigError{Source: src, Path: e.Path, Msg: e.Msg}
	}
	return errors.Join(errs...)
}

// topLevel decodes an input into its top-level keys, values left raw, for
// inputs a module reads only a few fields of and must not reject for the
// rest (another module's workload, the free-form workspace context).
func topLevel(src module.Source, b []byte) (map[string]*yaml.Node, error) {
	var m map[string]*yaml.Node
	if err := module.Decode(src, b, &m); err != nil {
		return nil, err
	}
	return m, nil
}

// problems collects the user's mistakes, so that one run reports them all.
type problems struct {
	errs []error
}

func (p *problems) add(src module.Source, path, format string, args ...any) {
	p.errs = append(p.errs, module.Invalid(src, path, format, args...))
}

func (p *problems) addErr(err error) {
	if err != nil {
		p.errs = append(p.errs, err)
	}
}

func (p *problems) err() error {
	return errors.Join(p.errs...)
}

// joinPath appends a key to a path, as the strict decoder does.
func joinPath(path, key string) string {
	return strict.Join(path, key)
}

func indexPath(path string, i int) string {
	return fmt.Sprintf("%s[%d]", path, i)
}

// dnsLabel turns a name into one Kubernetes accepts as a DNS label, keeping
// it as it is when it already is one. A name that is too long or holds other
// characters keeps a readable prefix and gets a hash of the whole, so that
// two different names never meet.
func dnsLabel(name string) string {
	if len(validation.IsDNS1123Label(name)) == 0 {
		return name
	}
	var b strings.Builder
	for _, r := range strings.ToLower(name) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') || r == '-' {
			b.WriteRune(r)
		} else {
			b.WriteByte('-')
		}
	}
	sum := sha256.Sum256([]byte(name))
	suffix := hex.EncodeToString(sum[:])[:8]
	prefix := b.String()
	if len(prefix) > maxDNSLabel-len(suffix)-1 {
		prefix = prefix[:maxDNSLabel-len(suffix)-1]
	}
	prefix = strings.Trim(prefix, "-")
	if prefix == "" {
		return "v-" + suffix
	}
	return prefix + "-" + suffix
}
