package terraform

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/hashicorp/hcl"
	"github.com/hashicorp/hcl/hcl/ast"
)

// A provider is a program Terraform downloads and runs, with our
// environment: a spec naming one from any host would run code of the
// author's choosing. So a provider's source must be allowed: by default the
// public registries' hashicorp/* and what the Terraform CLI configuration
// mirrors, plus what the operator names (Config.AllowProviders).

// publicRegistries are the hosts a source without one means: Terraform's
// and OpenTofu's registry.
var publicRegistries = []string{"registry.terraform.io", "registry.opentofu.org"}

// sourcePattern is host/namespace/type, lower case, "*" for any segment.
type sourcePattern [3]string

func (p sourcePattern) String() string { return strings.Join(p[:], "/") }

func (p sourcePattern) matches(source sourcePattern) bool {
	for i := range p {
		if p[i] != "*" && p[i] != source[i] {
			return false
		}
	}
	return true
}

var (
	hostSegment = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9.:-]*$`)
	nameSegment = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)
)

// parseSource reads a provider source as Terraform writes it, host
// included. Only ASCII is taken: a host or name that Unicode case folding
// would turn into an allowed one is refused, not compared.
func parseSource(s string) (sourcePattern, bool) {
	parts := strings.Split(s, "/")
	if len(parts) != 3 || !hostSegment.MatchString(parts[0]) || !nameSegment.MatchString(parts[1]) || !nameSegment.MatchString(parts[2]) {
		return sourcePattern{}, false
	}
	return sourcePattern{strings.ToLower(parts[0]), strings.ToLower(parts[1]), strings.ToLower(parts[2])}, true
}

// parsePatterns reads provider matching patterns as Terraform's CLI
// configuration writes them: host/namespace/type, or namespace/type for the
// public registry (either one: the binary may be terraform or tofu), each
// segment a name or "*".
func parsePatterns(strs []string) ([]sourcePattern, error) {
	var out []sourcePattern
	for _, s := range strs {
		s = strings.TrimSpace(s)
		parts := strings.Split(s, "/")
		hosts := publicRegistries
		switch len(parts) {
		case 3:
			hosts, parts = []string{parts[0]}, parts[1:]
		case 2:
		default:
			return nil, fmt.Errorf("%q: want host/namespace/type (or namespace/type), \"*\" for a whole segment", s)
		}
		for _, h := range hosts {
			p := sourcePattern{h, parts[0], parts[1]}
			for i, seg := range p {
				re := nameSegment
				if i == 0 {
					re = hostSegment
				}
				if seg != "*" && !re.MatchString(seg) {
					return nil, fmt.Errorf("%q: %q is neither a name nor \"*\"", s, seg)
				}
				p[i] = strings.ToLower(seg)
			}
			out = append(out, p)
		}
	}
	return out, nil
}

// providerRule allows the sources one of include matches and no exclude
// does; present, if set, also wants the source to be in it (a filesystem
// mirror allows what it holds).
type providerRule struct {
	// mirror: the rule is a mirror of the CLI configuration.
	mirror           bool
	include, exclude []sourcePattern
	present          map[sourcePattern]bool
}

func (r providerRule) allows(s sourcePattern) bool {
	if r.present != nil && !r.present[s] {
		return false
	}
	in := r.include == nil && r.present != nil
	for _, p := range r.include {
		in = in || p.matches(s)
	}
	for _, p := range r.exclude {
		if p.matches(s) {
			return false
		}
	}
	return in
}

// providerAllowlist is the rules a provider source must pass one of.
type providerAllowlist struct {
	rules []providerRule
}

// newProviderAllowlist makes the allowlist of the defaults, the mirrors
// the CLI configuration files name and the operator's patterns.
func newProviderAllowlist(allow []string, cliConfigs []string) (providerAllowlist, error) {
	var a providerAllowlist
	def, _ := parsePatterns([]string{"hashicorp/*"})
	a.rules = append(a.rules, providerRule{include: def})
	for _, path := range cliConfigs {
		rules, err := mirrorRules(path)
		if err != nil {
			return a, err
		}
		a.rules = append(a.rules, rules...)
	}
	if len(allow) > 0 {
		pats, err := parsePatterns(allow)
		if err != nil {
			return a, fmt.Errorf("%s: %w", ProvidersSetting, err)
		}
		a.rules = append(a.rules, providerRule{include: pats})
	}
	return a, nil
}

// check refuses t's provider unless a rule allows it. The builtin provider
// (terraform_data) is part of Terraform and always allowed.
func (a providerAllowlist) check(t target) error {
	if t.builtin() {
		return nil
	}
	s, ok := parseSource(t.source)
	if ok {
		for _, r := range a.rules {
			if r.allows(s) {
				return nil
			}
		}
	}
	return fmt.Errorf("extensions.provider: the provider source %q is not allowed (allowed: %s): refused before anything is installed; an operator allows more with the %s setting", t.source, a.describe(), ProvidersSetting)
}

// describe says what is allowed without naming the operator's files or
// mirrors: the message may reach a pull request comment.
func (a providerAllowlist) describe() string {
	var parts []string
	mirrors := false
	for _, r := range a.rules {
		if r.mirror {
			mirrors = true
			continue
		}
		for _, p := range r.include {
			parts = append(parts, p.String())
		}
	}
	if mirrors {
		parts = append(parts, "what the Terraform CLI configuration's mirrors provide")
	}
	return strings.Join(parts, ", ")
}

// cliConfigFiles are the Terraform CLI configuration files terraform or
// tofu will read: TF_CLI_CONFIG_FILE, else ~/.terraformrc and ~/.tofurc.
func cliConfigFiles(getenv func(string) string) []string {
	if f := getenv("TF_CLI_CONFIG_FILE"); f != "" {
		return []string{f}
	}
	home := getenv("HOME")
	if home == "" {
		return nil
	}
	return []string{filepath.Join(home, ".terraformrc"), filepath.Join(home, ".tofurc")}
}

// mirrorRules reads the provider_installation block of a CLI
// configuration file (HCL or JSON, as Terraform reads it): a
// filesystem_mirror allows the providers it holds that its include
// patterns match (all it holds without include), a network_mirror what its
// include patterns match (nothing without: what it serves is not known
// here). A file that does not exist allows nothing, as Terraform ignores it.
func mirrorRules(path string) ([]providerRule, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("terraform CLI configuration: %w", err)
	}
	file, err := hcl.ParseBytes(b)
	if err != nil {
		return nil, fmt.Errorf("terraform CLI configuration %s: %w", path, err)
	}
	root, ok := file.Node.(*ast.ObjectList)
	if !ok {
		return nil, nil
	}
	var rules []providerRule
	for _, m := range installationMethods(root) {
		if m.kind != "filesystem_mirror" && m.kind != "network_mirror" {
			continue
		}
		var mb struct {
			Path    string   `hcl:"path"`
			URL     string   `hcl:"url"`
			Include []string `hcl:"include"`
			Exclude []string `hcl:"exclude"`
		}
		if err := hcl.DecodeObject(&mb, m.body); err != nil {
			return nil, fmt.Errorf("terraform CLI configuration %s: %s: %w", path, m.kind, err)
		}
		r := providerRule{mirror: true}
		if r.include, err = parsePatterns(mb.Include); err != nil {
			return nil, fmt.Errorf("terraform CLI configuration %s: %s include: %w", path, m.kind, err)
		}
		if r.exclude, err = parsePatterns(mb.Exclude); err != nil {
			return nil, fmt.Errorf("terraform CLI configuration %s: %s exclude: %w", path, m.kind, err)
		}
		if m.kind == "filesystem_mirror" {
			r.present = mirrored(mb.Path)
		} else if r.include == nil {
			continue
		}
		rules = append(rules, r)
	}
	return rules, nil
}

type installationMethod struct {
	kind string
	body ast.Node
}

// installationMethods lists the blocks inside provider_installation. In
// HCL they are items of its body; HCL's JSON reader flattens
// {"provider_installation": {"network_mirror": {...}}} into one item keyed
// by both names.
func installationMethods(root *ast.ObjectList) []installationMethod {
	var out []installationMethod
	key := func(k *ast.ObjectKey) string {
		s, _ := k.Token.Value().(string)
		return s
	}
	// method adds a block, or each of a JSON list of them.
	method := func(kind string, v ast.Node) {
		if l, ok := v.(*ast.ListType); ok {
			for _, x := range l.List {
				out = append(out, installationMethod{kind: kind, body: x})
			}
			return
		}
		out = append(out, installationMethod{kind: kind, body: v})
	}
	var inBody func(v ast.Node)
	inBody = func(v ast.Node) {
		switch b := v.(type) {
		case *ast.ObjectType:
			for _, m := range b.List.Items {
				if len(m.Keys) > 0 {
					method(key(m.Keys[0]), m.Val)
				}
			}
		case *ast.ListType:
			for _, x := range b.List {
				inBody(x)
			}
		}
	}
	for _, it := range root.Items {
		if len(it.Keys) == 0 || key(it.Keys[0]) != "provider_installation" {
			continue
		}
		if len(it.Keys) > 1 {
			method(key(it.Keys[1]), it.Val)
			continue
		}
		inBody(it.Val)
	}
	return out
}

// mirrored lists the providers a filesystem mirror holds: its folders
// HOST/NAMESPACE/TYPE, in either of Terraform's layouts.
func mirrored(dir string) map[sourcePattern]bool {
	out := map[sourcePattern]bool{}
	hosts, _ := os.ReadDir(dir)
	for _, h := range hosts {
		namespaces, _ := os.ReadDir(filepath.Join(dir, h.Name()))
		for _, ns := range namespaces {
			types, _ := os.ReadDir(filepath.Join(dir, h.Name(), ns.Name()))
			for _, ty := range types {
				if !ty.IsDir() {
					continue
				}
				if s, ok := parseSource(h.Name() + "/" + ns.Name() + "/" + ty.Name()); ok {
					out[s] = true
				}
			}
		}
	}
	return out
}
