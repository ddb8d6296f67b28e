package builtin

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/kusionpr/kusionpr/engine/generate/module"
	"github.com/kusionpr/kusionpr/model"
)

// request builds a request for project proj, stack dev, app web.
func request(workload, dev, platform, ctx string) module.Request {
	return module.Request{
		Project:        "proj",
		Stack:          "dev",
		App:            "web",
		Workload:       []byte(workload),
		DevConfig:      []byte(dev),
		PlatformConfig: []byte(platform),
		Context:        []byte(ctx),
	}
}

// generate runs a module twice and checks that both runs agree: the spec is
// diffed against the last release, so any wobble would show as a change.
func generate(t *testing.T, name string, req module.Request) *module.Response {
	t.Helper()
	g, ok := Modules()[name]
	if !ok {
		t.Fatalf("no module %q", name)
	}
	first, err := g.Generate(context.Background(), req)
	if err != nil {
		t.Fatalf("%s: Generate: %v", name, err)
	}
	second, err := g.Generate(context.Background(), req)
	if err != nil {
		t.Fatalf("%s: second Generate: %v", name, err)
	}
	if !reflect.DeepEqual(first, second) {
		t.Fatalf("%s: two runs differ:\n%#v\n%#v", name, first, second)
	}
	if first == nil {
		t.Fatalf("%s: nil response", name)
	}
	return first
}

// wantErr is one expected ConfigError; a msg ending in * matches by prefix.
type wantErr struct {
	src  module.Source
	path string
	msg  string
}

func (w wantErr) String() string { return fmt.Sprintf("%s: %s: %s", w.src, w.path, w.msg) }

// checkErrors runs a module and compares its ConfigErrors, in order.
func checkErrors(t *testing.T, name string, req module.Request, want []wantErr) {
	t.Helper()
	_, err := Modules()[name].Generate(context.Background(), req)
	if err == nil {
		t.Fatalf("%s: no error, want %v", name, want)
	}
	got, ok := module.ConfigErrors(err)
	if !ok {
		t.Fatalf("%s: error is not all ConfigErrors: %v", name, err)
	}
	match := len(got) == len(want)
	for i := 0; match && i < len(got); i++ {
		w := want[i]
		msgOK := got[i].Msg == w.msg
		if p, isPrefix := strings.CutSuffix(w.msg, "*"); isPrefix {
			msgOK = strings.HasPrefix(got[i].Msg, p)
		}
		match = got[i].Source == w.src && got[i].Path == w.path && msgOK
	}
	if !match {
		var lines []string
		for _, e := range got {
			lines = append(lines, e.Error())
		}
		t.Fatalf("%s: errors\n  %s\nwant\n  %v", name, strings.Join(lines, "\n  "), want)
	}
}

func ids(rs model.Resources) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.ID
	}
	return out
}

// get walks an attribute tree by map keys (string) and list indexes (int).
func get(t *testing.T, v any, path ...any) any {
	t.Helper()
	for i, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				t.Fatalf("at %v: want a map, got %T", path[:i], v)
			}
			if v, ok = m[k]; !ok {
				keys := make([]string, 0, len(m))
				for key := range m {
					keys = append(keys, key)
				}
				sort.Strings(keys)
				t.Fatalf("at %v: no key %q (have %v)", path[:i], k, keys)
			}
		case int:
			l, ok := v.([]any)
			if !ok || k >= len(l) {
				t.Fatalf("at %v: want a list of more than %d, got %#v", path[:i], k, v)
			}
			v = l[k]
		}
	}
	return v
}

// has says whether a key is present at path.
func has(t *testing.T, v any, path ...any) bool {
	t.Helper()
	parent := get(t, v, path[:len(path)-1]...)
	m, ok := parent.(map[string]any)
	if !ok {
		return false
	}
	_, ok = m[path[len(path)-1].(string)]
	return ok
}

func equal(t *testing.T, what string, got, want any) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s:\n got %#v\nwant %#v", what, got, want)
	}
}

func TestModulesNames(t *testing.T) {
	var names []string
	for n := range Modules() {
		names = append(names, n)
	}
	sort.Strings(names)
	equal(t, "module names", names, []string{"job", "mysql", "network", "opsrule", "postgres", "service"})
}

// Every Kubernetes resource must carry the GVK Kusion's runtime reads, and
// its id must say what its attributes say.
func TestResourceIdentity(t *testing.T) {
	cases := []struct {
		module string
		req    module.Request
	}{
		{"service", request("_type: service.Service\ncontainers: {main: {image: nginx, files: {/a/b: {content: x}}}}", "", "", "")},
		{"job", request("_type: job.Job\nschedule: '* * * * *'\ncontainers: {main: {image: busybox}}", "", "", "")},
		{"network", request("_type: service.Service", "ports: [{port: 80}, {port: 443, public: true}]", "type: aws", "")},
		{"opsrule", request("_type: service.Service\ntype: CollaSet", "maxUnavailable: 1", "", "")},
		{"mysql", request("", "type: local\nversion: '8.0'", "", "")},
		{"postgres", request("", "type: cloud\nversion: '14'", "cloud: aws\ninstanceType: db.t3.micro\nregion: us-east-1", "")},
	}
	for _, c := range cases {
		t.Run(c.module, func(t *testing.T) {
			resp := generate(t, c.module, c.req)
			if len(resp.Resources) == 0 {
				t.Fatal("no resources")
			}
			for _, r := range resp.Resources {
				switch r.Type {
				case model.Kubernetes:
					apiVersion := get(t, r.Attributes, "apiVersion").(string)
					kind := get(t, r.Attributes, "kind").(string)
					ns, _ := get(t, r.Attributes, "metadata").(map[string]any)["namespace"].(string)
					name := get(t, r.Attributes, "metadata", "name").(string)
					equal(t, "id", r.ID, model.KubernetesIDOf(apiVersion, kind, ns, name))
					equal(t, "namespace of "+r.ID, ns, "proj")
					gvk := apiVersion + ", Kind=" + kind
					if !strings.Contains(apiVersion, "/") {
						gvk = "/" + gvk
					}
					equal(t, "GVK of "+r.ID, r.Extensions["GVK"], gvk)
					for _, empty := range []string{"status", "creationTimestamp"} {
						if _, ok := r.Attributes[empty]; ok {
							t.Errorf("%s has %s", r.ID, empty)
						}
					}
				case model.Terraform:
					if _, err := model.ParseTerraformID(r.ID); err != nil {
						t.Error(err)
					}
					parts := strings.Split(r.ID, ":")
					equal(t, "resourceType of "+r.ID, r.Extensions["resourceType"], parts[2])
				default:
					t.Errorf("%s: type %q", r.ID, r.Type)
				}
			}
		})
	}
}

// An empty input is an absent one: a module called without its config
// generates nothing rather than failing.
func TestEmptyInputs(t *testing.T) {
	for _, name := range []string{"service", "job", "network", "opsrule"} {
		t.Run(name, func(t *testing.T) {
			resp := generate(t, name, request("", "", "", ""))
			if len(resp.Resources) != 0 || resp.Patcher != nil {
				t.Errorf("got %#v", resp)
			}
		})
	}
}
