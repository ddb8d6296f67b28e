package generate

import (
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"

	"gopkg.in/yaml.v3"

	"github.com/kusionpr/kusionpr/engine/generate/strict"
	"github.com/kusionpr/kusionpr/model"
)

// workloadSecret is one entry of a workload's secrets, in Kusion's shape.
type workloadSecret struct {
	Type      string            `json:"type"`
	Params    map[string]string `json:"params,omitempty"`
	Data      map[string]string `json:"data,omitempty"`
	Immutable bool              `json:"immutable,omitempty"`
}

// secretTypes: what each of Kusion's secret types becomes, and the keys it
// must have. Kusion fills a missing basic-auth password or token with a
// random value on every generate; a Spec that changes on every run would
// show a change in every preview and rotate the secret on every apply, so
// here the value must be given.
var secretTypes = map[string]struct {
	kubeType string
	required []string
}{
	"opaque":      {kubeType: "Opaque"},
	"basic":       {kubeType: "kubernetes.io/basic-auth", required: []string{"username", "password"}},
	"token":       {kubeType: "Opaque", required: []string{"token"}},
	"certificate": {kubeType: "kubernetes.io/tls", required: []string{"tls.crt", "tls.key"}},
}

var secretName = regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`)

// workloadSecrets makes the Secrets a workload declares, in name order.
// Messages never repeat a value.
func workloadSecrets(in Input, app App) ([]model.Resource, error) {
	node := secretsNode(app.Workload.Node)
	if node == nil {
		return nil, nil
	}
	base := app.Name + ".workload.secrets"
	var secrets map[string]workloadSecret
	if err := strict.Decode(node, base, &secrets); err != nil {
		return nil, fileErrors(in.AppFile, err)
	}
	var (
		out  []model.Resource
		errs []error
	)
	fail := func(path, format string, args ...any) {
		where := in.AppFile
		if l := lineOf(app.Workload.Node, "secrets."+path); l > 0 {
			where = fmt.Sprintf("%s:%d", in.AppFile, l)
		}
		errs = append(errs, fmt.Errorf("%s: %s.%s: %s", where, base, path, fmt.Sprintf(format, args...)))
	}
	for _, name := range slices.Sorted(maps.Keys(secrets)) {
		s := secrets[name]
		if !secretName.MatchString(name) || len(name) > 253 {
			fail(name, "not a valid Secret name (lower-case letters, digits, '-' and '.')")
			continue
		}
		if s.Type == "external" {
			fail(name+".type", "external secrets need the workspace's secret store at apply time, which this tool does not read yet: create the Secret apart, or use type opaque")
			continue
		}
		t, ok := secretTypes[s.Type]
		if !ok {
			fail(name+".type", "want one of basic, certificate, opaque, token (external is not supported)")
			continue
		}
		missing := false
		for _, k := range t.required {
			if s.Data[k] == "" {
				fail(name+".data."+k, "required for a %s secret (a generated value would change on every generate)", s.Type)
				missing = true
			}
		}
		if missing {
			continue
		}
		keys := make([]string, 0, len(s.Data))
		for k := range s.Data {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		data := map[string]any{}
		for _, k := range keys {
			if t.required != nil && !slices.Contains(t.required, k) {
				fail(name+".data."+k, "a %s secret holds only %v", s.Type, t.required)
				continue
			}
			data[k] = base64.StdEncoding.EncodeToString([]byte(s.Data[k]))
		}
		attrs := map[string]any{
			"apiVersion": "v1",
			"kind":       "Secret",
			"metadata":   map[string]any{"name": name, "namespace": in.Project},
			"type":       t.kubeType,
		}
		if len(data) > 0 {
			attrs["data"] = data
		}
		if s.Immutable {
			attrs["immutable"] = true
		}
		out = append(out, model.Resource{
			ID:         model.KubernetesIDOf("v1", "Secret", in.Project, name),
			Type:       model.Kubernetes,
			Attributes: attrs,
			Extensions: map[string]any{gvkExtension: "/v1, Kind=Secret"},
		})
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}

func secretsNode(workload *yaml.Node) *yaml.Node {
	w := resolved(workload)
	if w == nil || w.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(w.Content); i += 2 {
		if w.Content[i].Value == "secrets" && !isNull(w.Content[i+1]) {
			return w.Content[i+1]
		}
	}
	return nil
}
