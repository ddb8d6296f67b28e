// Package module runs Kusion modules: the kusion-module-<name> binaries that
// Kusion's platform engineers publish, which turn a workload and its
// configuration into resources. They speak hashicorp/go-plugin over gRPC, and
// this package speaks the same protocol, so a binary built for Kusion runs
// here unchanged.
//
// The protocol, as Kusion defines it (kusionstack.io/kusion
// pkg/modules/plugin.go and pkg/modules/proto/module.proto):
//
//   - handshake: protocol version 1, magic cookie MODULE_PLUGIN=ON; gRPC only;
//     the plugin is dispensed as "module-default";
//   - one unary RPC, /Module/Generate(GeneratorRequest) GeneratorResponse;
//   - the request carries the project, stack and app names and the workload,
//     developer config, platform config, workspace context and secret store,
//     each already encoded as YAML by the caller (Kusion writes the workload
//     with gopkg.in/yaml.v2 and the rest with gopkg.in/yaml.v3);
//   - the response carries one YAML document per resource and one YAML
//     document for the Patcher.
package module

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/kusionpr/kusionpr/engine/spec"
	"github.com/kusionpr/kusionpr/model"
)

// Request is what a module is asked to generate from. The byte fields hold
// YAML documents; a module decodes only those it needs.
type Request struct {
	Project string
	Stack   string
	App     string
	// Workload is the app's workload (service or job) from the AppConfiguration.
	Workload []byte
	// DevConfig is the developer's configuration of this module (the accessory).
	DevConfig []byte
	// PlatformConfig is the platform engineer's configuration of this module
	// from the workspace.
	PlatformConfig []byte
	// Context is the workspace context.
	Context []byte
	// SecretStore is the workspace's secret store.
	SecretStore []byte
}

// Response is what a module generated.
type Response struct {
	Resources model.Resources
	// Patcher is nil when the module patches nothing.
	Patcher *Patcher
}

// Patcher is what a module asks to change in the workload and in other
// resources, in Kusion's format (pkg/apis/api.kusion.io/v1 Patcher).
type Patcher struct {
	// Environments are added to every container of the workload.
	Environments []corev1.EnvVar `json:"environments,omitempty"`
	// Labels and Annotations go on the workload, PodLabels and PodAnnotations
	// on its pod template.
	Labels         map[string]string `json:"labels,omitempty"`
	PodLabels      map[string]string `json:"podLabels,omitempty"`
	Annotations    map[string]string `json:"annotations,omitempty"`
	PodAnnotations map[string]string `json:"podAnnotations,omitempty"`
	// JSONPatchers patch arbitrary resources, keyed by resource id.
	JSONPatchers map[string]JSONPatcher `json:"jsonPatcher,omitempty"`
}

// PatchType says how a JSONPatcher's payload applies.
type PatchType string

const (
	// JSONPatch is an RFC 6902 JSON patch.
	JSONPatch PatchType = "JSONPatch"
	// MergePatch is an RFC 7396 JSON merge patch.
	MergePatch PatchType = "MergePatch"
)

// JSONPatcher is one patch of a resource's attributes.
type JSONPatcher struct {
	Type    PatchType
	Payload []byte
}

// jsonPatcherWire is JSONPatcher with the payload as Kusion writes it. Kusion
// declares the payload []byte and marshals with a YAML library, so it goes
// on the wire as a list of byte values — the only form Kusion's own yaml.v3
// decoder reads back.
type jsonPatcherWire struct {
	Type    PatchType       `json:"type"`
	Payload json.RawMessage `json:"payload"`
}

// MarshalJSON writes the payload as a list of byte values, so that a patcher
// this package encodes (in Serve) is one Kusion can read.
func (p JSONPatcher) MarshalJSON() ([]byte, error) {
	vals := make([]int, len(p.Payload))
	for i, c := range p.Payload {
		vals[i] = int(c)
	}
	payload, err := json.Marshal(vals)
	if err != nil {
		return nil, err
	}
	return json.Marshal(jsonPatcherWire{Type: p.Type, Payload: payload})
}

// UnmarshalJSON reads the payload as Kusion's list of byte values, and, for
// patchers written by hand or by encoding/json, as a string holding the
// patch itself or its base64 encoding.
func (p *JSONPatcher) UnmarshalJSON(b []byte) error {
	var w jsonPatcherWire
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	p.Type = w.Type
	p.Payload = nil
	raw := bytes.TrimSpace(w.Payload)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil
	}
	if raw[0] == '[' {
		var vals []uint8
		if err := json.Unmarshal(raw, &vals); err != nil {
			return fmt.Errorf("payload: want a list of byte values or a string: %w", err)
		}
		p.Payload = vals
		return nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return fmt.Errorf("payload: want a list of byte values or a string: %w", err)
	}
	if json.Valid([]byte(s)) {
		p.Payload = []byte(s)
		return nil
	}
	dec, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return fmt.Errorf("payload: a string that is neither JSON nor base64")
	}
	p.Payload = dec
	return nil
}

// decodeResponse turns the module's YAML into resources and a patcher. Each
// resource is checked and decoded as a Spec's resources are (engine/spec), so
// a module's output means here what it would mean in a spec file.
func decodeResponse(binary string, w *generatorResponse) (*Response, error) {
	items := make([]string, len(w.Resources))
	for i, r := range w.Resources {
		js, err := yaml.YAMLToJSONStrict(r)
		if err != nil {
			return nil, fmt.Errorf("module %s: resource %d of %d is not valid YAML: %w", binary, i+1, len(w.Resources), err)
		}
		items[i] = string(js)
	}
	doc := `{"resources":[` + strings.Join(items, ",") + `]}`
	s, err := spec.Parse("module "+binary, []byte(doc))
	if err != nil {
		return nil, err
	}
	out := &Response{Resources: s.Resources}
	if len(bytes.TrimSpace(w.Patcher)) == 0 {
		return out, nil
	}
	var p Patcher
	if err := yaml.UnmarshalStrict(w.Patcher, &p); err != nil {
		return nil, fmt.Errorf("module %s: decoding the patcher: %w", binary, err)
	}
	out.Patcher = &p
	return out, nil
}

// encodeResponse is decodeResponse's inverse, for Serve.
func encodeResponse(r *Response) (*generatorResponse, error) {
	w := &generatorResponse{}
	if r == nil {
		return w, nil
	}
	for i, res := range r.Resources {
		b, err := yaml.Marshal(res)
		if err != nil {
			return nil, fmt.Errorf("encoding resource %d (%s): %w", i+1, res.ID, err)
		}
		w.Resources = append(w.Resources, b)
	}
	if r.Patcher != nil {
		b, err := yaml.Marshal(r.Patcher)
		if err != nil {
			return nil, fmt.Errorf("encoding the patcher: %w", err)
		}
		w.Patcher = b
	}
	return w, nil
}
