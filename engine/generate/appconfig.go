// Package generate turns a stack's AppConfigurations and its workspace into
// a Spec, as `kusion generate` does: for each app, in name order, the
// Namespace, the workload's Secrets, the workload and every accessory from
// their modules (built in, or Kusion module binaries over Kusion's plugin
// protocol), the modules' patches, imported resources, and dependsOn in the
// order Kubernetes wants kinds created. The same inputs give the same Spec,
// byte for byte, whichever machine generates it.
//
// Errors name the file and the field the user has to change:
// "shop/dev/main.yaml: web.accessories.db.type: ...".
package generate

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/kusionpr/kusionpr/engine/generate/strict"
)

// App is one AppConfiguration: the workload and accessories an application
// developer declares, each naming its module by `_type` as Kusion's
// compiled KCL does (service.Service, mysql.MySQL).
type App struct {
	Name string
	// Workload is the workload mapping as written; nil if the app has none.
	Workload *Part
	// Accessories are in name order.
	Accessories []Part
	Labels      map[string]string
	Annotations map[string]string
}

// Part is the workload or one accessory: its module and its configuration.
type Part struct {
	// Key is "workload" or "accessories.<name>", its place in the app.
	Key string
	// Module is the module name, the part of `_type` before the first dot.
	Module string
	// Node is the configuration as written, handed to the module as YAML.
	Node *yaml.Node
}

// appConfiguration is Kusion's AppConfiguration (api.kusion.io/v1).
type appConfiguration struct {
	// Name is overwritten by the app's key, as in Kusion.
	Name        string                `json:"name,omitempty"`
	Workload    *yaml.Node            `json:"workload"`
	Accessories map[string]*yaml.Node `json:"accessories,omitempty"`
	Labels      map[string]string     `json:"labels,omitempty"`
	Annotations map[string]string     `json:"annotations,omitempty"`
}

// appName: the app's name becomes part of Kubernetes names
// (<project>-<stack>-<app>), so it must be a DNS label's worth.
var appName = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// LoadApps reads a stack's AppConfigurations from path (main.yaml).
func LoadApps(path string) ([]App, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading AppConfigurations: %w", err)
	}
	return ParseApps(path, data)
}

// ParseApps reads AppConfigurations: a mapping of app name to
// AppConfiguration. name (the file) prefixes every message.
func ParseApps(name string, data []byte) ([]App, error) {
	root, err := strict.Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	var raw map[string]*appConfiguration
	if err := strict.Decode(root, "", &raw); err != nil {
		return nil, fileErrors(name, err)
	}
	if len(raw) == 0 {
		return nil, fmt.Errorf("%s: no apps: want a mapping of app name to AppConfiguration (workload, accessories, labels, annotations)", name)
	}
	names := make([]string, 0, len(raw))
	for n := range raw {
		names = append(names, n)
	}
	sort.Strings(names)
	var (
		apps []App
		errs []error
	)
	for _, n := range names {
		ac := raw[n]
		if !appName.MatchString(n) || len(n) > 63 {
			errs = append(errs, fmt.Errorf("%s: %s: an app name must be lower-case letters, digits and '-', starting and ending with a letter or digit (it becomes part of Kubernetes names)", name, n))
			continue
		}
		if ac == nil {
			errs = append(errs, fmt.Errorf("%s: %s: empty AppConfiguration: want workload and accessories", name, n))
			continue
		}
		app := App{Name: n, Labels: ac.Labels, Annotations: ac.Annotations}
		if ac.Workload != nil && !isNull(ac.Workload) {
			p, err := part(name, n, "workload", ac.Workload)
			if err != nil {
				errs = append(errs, err)
			} else {
				app.Workload = &p
			}
		}
		keys := make([]string, 0, len(ac.Accessories))
		for k := range ac.Accessories {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			p, err := part(name, n, "accessories."+k, ac.Accessories[k])
			if err != nil {
				errs = append(errs, err)
				continue
			}
			app.Accessories = append(app.Accessories, p)
		}
		apps = append(apps, app)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return apps, nil
}

// part reads the module name from a workload or accessory's _type.
func part(file, app, key string, n *yaml.Node) (Part, error) {
	where := app + "." + key
	if n == nil || isNull(n) {
		return Part{}, fmt.Errorf("%s: %s: empty: want a mapping with _type naming its module", file, where)
	}
	m := resolved(n)
	if m.Kind != yaml.MappingNode {
		return Part{}, fmt.Errorf("%s: %s: want a mapping, got %s", file, where, kindOf(m))
	}
	// Only _type is read here; the module checks the rest.
	var typ *yaml.Node
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == "_type" {
			typ = resolved(m.Content[i+1])
		}
	}
	if typ == nil || typ.Kind != yaml.ScalarNode || typ.Value == "" {
		return Part{}, fmt.Errorf("%s: %s._type: required: the module that generates it, as <module>.<Schema> (for example service.Service or mysql.MySQL)", file, where)
	}
	mod, _, _ := strings.Cut(typ.Value, ".")
	return Part{Key: key, Module: mod, Node: m}, nil
}

// fileErrors prefixes each of a decoder's errors with the file and line.
func fileErrors(file string, err error) error {
	list := strict.Errors(err)
	errs := make([]error, len(list))
	for i, e := range list {
		if e.Line > 0 {
			errs[i] = fmt.Errorf("%s:%d: %s", file, e.Line, e.Error())
		} else {
			errs[i] = fmt.Errorf("%s: %s", file, e.Error())
		}
	}
	return errors.Join(errs...)
}

func resolved(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool {
	n = resolved(n)
	return n == nil || (n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null")
}

func kindOf(n *yaml.Node) string {
	switch resolved(n).Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	}
	return "a scalar"
}
