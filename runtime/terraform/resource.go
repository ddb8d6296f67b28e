package terraform

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/kusionpr/kusionpr/model"
)

// Kusion's Terraform extensions.
const (
	providerExtension     = "provider"
	providerMetaExtension = "providerMeta"
	resourceTypeExtension = "resourceType"
)

// builtinProvider serves terraform_data (builtinResourceType); it needs no
// installation.
const (
	builtinProvider     = "terraform.io/builtin/terraform"
	builtinResourceType = "terraform_data"
)

// target is a resource as Terraform addresses it.
type target struct {
	id model.TerraformID
	// source is the provider's address without version
	// (registry.terraform.io/hashicorp/local); version may be empty.
	source, version string
	// localName is the provider's name inside the configuration (local).
	localName    string
	resourceType string
	name         string
	providerMeta map[string]any
}

var (
	identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]*$`)
	// versionConstraint is what a version may hold: an exact version, or a
	// constraint. Nothing a template could start with.
	versionConstraint = regexp.MustCompile(`^[0-9A-Za-z.+~=<>!, -]+$`)
)

func parseTarget(r model.Resource) (target, error) {
	id, err := model.ParseTerraformID(r.ID)
	if err != nil {
		return target{}, err
	}
	t := target{id: id, resourceType: id.ResourceType, name: terraformName(id.Name)}
	if rt, ok := r.Extensions[resourceTypeExtension].(string); ok && rt != "" {
		t.resourceType = rt
	}
	if !identifier.MatchString(t.resourceType) {
		return target{}, fmt.Errorf("extensions.resourceType %q: not a Terraform resource type name", t.resourceType)
	}
	if err := checkAttributes(r.Attributes); err != nil {
		return target{}, err
	}
	provider, _ := r.Extensions[providerExtension].(string)
	switch {
	case t.resourceType == builtinResourceType, provider == builtinProvider:
		// Terraform serves terraform_data itself, whatever provider the
		// spec names: Kusion needs one named to run it at all, writes it
		// into required_providers and never into the resource, so
		// Terraform installs that provider and leaves it unused.
		t.source, t.localName = builtinProvider, "terraform"
		return t, nil
	case provider == "":
		return target{}, fmt.Errorf("extensions.provider is missing: want host/namespace/name/version, for example registry.terraform.io/hashicorp/local/1.4.0")
	default:
		p := strings.Split(provider, "/")
		switch len(p) {
		case 4:
			t.source, t.version = strings.Join(p[:3], "/"), p[3]
		case 3:
			t.source = provider
		default:
			return target{}, fmt.Errorf("extensions.provider %q: want host/namespace/name/version", provider)
		}
		t.localName = p[2]
		if _, ok := parseSource(t.source); !ok || !identifier.MatchString(t.localName) {
			return target{}, fmt.Errorf("extensions.provider %q: want host/namespace/name/version, each a name", provider)
		}
		if t.version != "" && !versionConstraint.MatchString(t.version) {
			return target{}, fmt.Errorf("extensions.provider %q: %q is not a version", provider, t.version)
		}
	}
	if meta, ok := r.Extensions[providerMetaExtension].(map[string]any); ok {
		t.providerMeta = meta
	} else if r.Extensions[providerMetaExtension] != nil {
		return target{}, fmt.Errorf("extensions.providerMeta is not an object")
	}
	return t, nil
}

// terraformName is the resource's name in the configuration and the state:
// the id's name when Terraform accepts it, else a stable digest of it.
func terraformName(name string) string {
	if identifier.MatchString(name) {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	return "r_" + hex.EncodeToString(sum[:8])
}

func (t target) address() string { return t.resourceType + "." + t.name }

func (t target) builtin() bool { return t.source == builtinProvider }

// providerAddress is how the state names the provider.
func (t target) providerAddress() string { return `provider["` + t.source + `"]` }

// configuration is main.tf.json for one resource. Without attrs only the
// provider is configured: what a destroy needs, the resource being in the
// state alone.
func (t target) configuration(attrs map[string]any, withResource bool, importID string) ([]byte, error) {
	doc := map[string]any{}
	if !t.builtin() {
		req := map[string]any{"source": t.source}
		if t.version != "" {
			req["version"] = t.version
		}
		doc["terraform"] = map[string]any{"required_providers": map[string]any{t.localName: req}}
		if len(t.providerMeta) > 0 {
			meta, err := literalMap(t.providerMeta)
			if err != nil {
				return nil, fmt.Errorf("extensions.providerMeta: %w", err)
			}
			doc["provider"] = map[string]any{t.localName: meta}
		}
	}
	if withResource {
		// The spec's attributes, written so that Terraform reads them as
		// they are (literal.go); then what the runtime adds itself.
		body, err := literalMap(attrs)
		if err != nil {
			return nil, fmt.Errorf("attributes: %w", err)
		}
		if !t.builtin() && !strings.HasPrefix(t.resourceType, t.localName+"_") {
			body["provider"] = t.localName
		}
		doc["resource"] = map[string]any{t.resourceType: map[string]any{t.name: body}}
		if importID != "" {
			doc["import"] = []any{map[string]any{"to": t.address(), "id": escapeTemplate(importID)}}
		}
	}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode configuration: %w", err)
	}
	return b, nil
}

// providerKey identifies what `init` installs for t: a folder initialised for
// one key needs no new init for the same key.
func (t target) providerKey(binary string) string {
	return binary + "|" + t.source + "@" + t.version
}
