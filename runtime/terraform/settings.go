package terraform

import (
	"fmt"
	"slices"
	"strings"
)

// A provider's own configuration (a spec's extensions.providerMeta) is where
// Terraform providers take their credentials and how they get them: aws's
// access_key, profile, shared_credentials_files and assume_role, google's
// credentials file, and the exec block of hashicorp/kubernetes and
// hashicorp/helm, which runs a command of the configuration's choosing on
// every plan. A pull request writes the spec, so by default it may set only
// what says where resources go, not how the provider authenticates or what
// it runs; the operator allows more by name.

// defaultProviderSettings are the provider arguments any spec may set.
var defaultProviderSettings = []string{"region"}

// ProviderSettingsSetting names Config.ProviderSettings in errors, as the
// action and the bot spell it.
const ProviderSettingsSetting = "terraform-provider-settings (--terraform-provider-settings, KUSIONPR_TERRAFORM_PROVIDER_SETTINGS)"

// providerSettings are the arguments a spec's providerMeta may set: each
// entry "name" (any provider's), "type.name" (one provider's, by its local
// name: "aws.endpoints"), "type.*" or "*".
type providerSettings []string

func parseProviderSettings(extra []string) (providerSettings, error) {
	s := slices.Clone(defaultProviderSettings)
	for _, e := range extra {
		typ, name, scoped := strings.Cut(e, ".")
		if !scoped {
			typ, name = "", e
		}
		if (typ != "" || scoped) && !identifier.MatchString(typ) || name != "*" && !identifier.MatchString(name) {
			return nil, fmt.Errorf("%s: %q is not a provider argument (name, type.name, type.* or *)", ProviderSettingsSetting, e)
		}
		s = append(s, e)
	}
	return s, nil
}

func (s providerSettings) allows(providerType, arg string) bool {
	for _, e := range s {
		if e == "*" || e == arg || e == providerType+"."+arg || e == providerType+".*" {
			return true
		}
	}
	return false
}

// check refuses t's providerMeta arguments the settings do not allow,
// naming the argument but never its value.
func (s providerSettings) check(t target) error {
	args := make([]string, 0, len(t.providerMeta))
	for k := range t.providerMeta {
		args = append(args, k)
	}
	slices.Sort(args)
	for _, k := range args {
		if !s.allows(t.localName, k) {
			return fmt.Errorf("extensions.providerMeta: a spec may not set the %s provider's argument %q: "+
				"a provider's own configuration chooses how it authenticates and may run commands; "+
				"refused before anything runs; an operator allows it with the %s setting",
				t.localName, k, ProviderSettingsSetting)
		}
	}
	return nil
}
