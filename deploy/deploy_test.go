package deploy_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/kusionpr/kusionpr/internal/testenv"
	"github.com/kusionpr/kusionpr/settings"
)

const (
	manifestFile = "github-app-manifest.json"
	botFile      = "kubernetes/bot.yaml"
	jobsFile     = "kubernetes/jobs.yaml"
	ingressFile  = "kubernetes/ingress.yaml"
	filesPatch   = "kubernetes/bot-files.yaml"
	accessFile   = "kubernetes/cluster-access.yaml"
	namespace    = "kusionpr"
)

// appManifestFields is github-app-manifest.json as the checks read it.
type appManifestFields struct {
	Name           string `json:"name"`
	URL            string `json:"url"`
	HookAttributes struct {
		URL    string `json:"url"`
		Active *bool  `json:"active"`
	} `json:"hook_attributes"`
	Public      *bool             `json:"public"`
	Permissions map[string]string `json:"default_permissions"`
	Events      []string          `json:"default_events"`
}

func appManifest(t *testing.T) appManifestFields {
	t.Helper()
	b, err := os.ReadFile(manifestFile)
	if err != nil {
		t.Fatal(err)
	}
	var m appManifestFields
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v", manifestFile, err)
	}
	return m
}

// TestAppManifest checks the GitHub App manifest asks for the events the bot
// handles and the permissions its API calls need.
func TestAppManifest(t *testing.T) {
	m := appManifest(t)
	if m.Name == "" || m.URL == "" {
		t.Errorf("%s: name and url are required", manifestFile)
	}
	if !strings.HasSuffix(m.HookAttributes.URL, "/webhook") || m.HookAttributes.Active == nil || !*m.HookAttributes.Active {
		t.Errorf("%s: hook_attributes = %+v, want an active hook on .../webhook", manifestFile, m.HookAttributes)
	}
	if m.Public == nil || *m.Public {
		t.Errorf("%s: public should be false", manifestFile)
	}
	// workflow_run: the runs the github-actions executor dispatched;
	// merge_group: a merge queue asking for the checks of a group;
	// check_run: a press of a check run's Apply button.
	for _, e := range []string{"pull_request", "issue_comment", "merge_group", "check_run", "workflow_run"} {
		if !slices.Contains(m.Events, e) {
			t.Errorf("%s: default_events %v lacks %s", manifestFile, m.Events, e)
		}
	}
	for p, want := range map[string]string{
		"checks":        "write",
		"issues":        "write",
		"contents":      "read",
		"pull_requests": "read",
		"statuses":      "read",
		"metadata":      "read",
		// The github-actions executor dispatches workflows (write) and
		// reads their runs and artifacts (which write includes).
		"actions": "write",
		// merge_group events are sent to Apps that may read merge queues.
		"merge_queues": "read",
		// Each apply and destroy is recorded as a deployment.
		"deployments": "write",
	} {
		if got := m.Permissions[p]; got != want {
			t.Errorf("%s: default_permissions.%s = %q, want %q", manifestFile, p, got, want)
		}
	}
}

// kubectl runs kubectl on the test cluster as its administrator, with stdin
// as its standard input.
func kubectl(t *testing.T, stdin string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command("kubectl", append([]string{"--kubeconfig", testenv.Kubeconfig(t)}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// ensureNamespace makes the namespace ns unless it exists, and removes it
// when the test ends if it made it: a dry run cannot make a namespace for
// the objects in it.
func ensureNamespace(t *testing.T, ns string) {
	t.Helper()
	phase, err := kubectl(t, "", "get", "namespace", ns, "-o", "jsonpath={.status.phase}")
	if err == nil && phase == "Terminating" {
		// Left by an earlier run: wait until it is gone.
		if out, err := kubectl(t, "", "wait", "--for=delete", "namespace/"+ns, "--timeout=120s"); err != nil {
			t.Fatalf("namespace %s is terminating: %v\n%s", ns, err, out)
		}
		err = os.ErrNotExist
	}
	if err != nil {
		out, err := kubectl(t, "", "create", "namespace", ns, "--save-config")
		switch {
		case err == nil:
			t.Cleanup(func() {
				if out, err := kubectl(t, "", "delete", "namespace", ns, "--ignore-not-found", "--wait=false"); err != nil {
					t.Logf("delete namespace %s: %v\n%s", ns, err, out)
				}
			})
		case strings.Contains(out, "AlreadyExists"):
		default:
			t.Fatalf("create namespace %s: %v\n%s", ns, err, out)
		}
	}
}

// TestKubernetesServerDryRun has a real API server validate every object of
// bot.yaml, jobs.yaml and ingress.yaml (a server-side dry run), and bot.yaml's
// Deployment patched with bot-files.yaml as `kubectl patch` patches it. Each
// file's namespace is made first if missing and removed afterwards.
// (cluster-access.yaml is applied for real, renamed, by TestClusterAccess.)
func TestKubernetesServerDryRun(t *testing.T) {
	for _, f := range []struct{ file, ns string }{{botFile, namespace}, {jobsFile, "kusionpr-runs"}, {ingressFile, namespace}} {
		ensureNamespace(t, f.ns)
		out, err := kubectl(t, "", "apply", "--dry-run=server", "-f", f.file)
		if err != nil {
			t.Fatalf("kubectl apply --dry-run=server -f %s: %v\n%s", f.file, err, out)
		}
		t.Logf("kubectl apply --dry-run=server -f %s:\n%s", f.file, out)
	}

	var deployment string
	for _, d := range documents(t, botFile) {
		if d.obj["kind"] == "Deployment" {
			deployment = d.text
		}
	}
	local := filepath.Join(t.TempDir(), "deployment.yaml")
	if err := os.WriteFile(local, []byte(deployment), 0o600); err != nil {
		t.Fatal(err)
	}
	patched, err := kubectl(t, "", "patch", "--local", "-f", local, "--type", "strategic", "--patch-file", filesPatch, "-o", "yaml")
	if err != nil {
		t.Fatalf("kubectl patch --local (%s's Deployment) --patch-file %s: %v\n%s", botFile, filesPatch, err, patched)
	}
	if out, err := kubectl(t, patched, "apply", "--dry-run=server", "-f", "-"); err != nil {
		t.Fatalf("%s's Deployment patched with %s: kubectl apply --dry-run=server: %v\n%s\n%s", botFile, filesPatch, err, out, patched)
	}
	// The patch keeps the bot's container and mounts the Secret where the
	// variable says the key is.
	var obj map[string]any
	if err := yaml.Unmarshal([]byte(patched), &obj); err != nil {
		t.Fatal(err)
	}
	var mounts []string
	var keyPath string
	walk(obj, func(key string, m map[string]any) {
		switch {
		case key == "volumeMounts":
			mounts = append(mounts, fmt.Sprint(m["mountPath"]))
		case key == "env" && m["name"] == "GOOGLE_APPLICATION_CREDENTIALS":
			keyPath = fmt.Sprint(m["value"])
		}
	})
	if keyPath == "" || !slices.ContainsFunc(mounts, func(m string) bool { return strings.HasPrefix(keyPath, m+"/") }) {
		t.Errorf("%s: GOOGLE_APPLICATION_CREDENTIALS %q lies in no mounted folder (%v)", filesPatch, keyPath, mounts)
	}
}

// document is one YAML document of a manifest: where it starts, its text
// and what it holds.
type document struct {
	line int
	text string
	obj  map[string]any
}

// documents splits a manifest at its --- lines and parses each document.
func documents(t *testing.T, file string) []document {
	t.Helper()
	var out []document
	start, buf := 1, []string{}
	flush := func(next int) {
		text := strings.Join(buf, "\n") + "\n"
		var obj map[string]any
		if err := yaml.Unmarshal([]byte(text), &obj); err != nil {
			t.Errorf("%s:%d: %v", rel(file), start, err)
		} else if obj != nil {
			out = append(out, document{line: start, text: text, obj: obj})
		}
		start, buf = next, nil
	}
	for i, l := range lines(t, file) {
		if strings.TrimRight(l, " \t") == "---" {
			flush(i + 2)
			continue
		}
		buf = append(buf, l)
	}
	flush(0)
	return out
}

// pages are what a platform team reads: the README and docs/.
func pages(t *testing.T) []string {
	t.Helper()
	docs, err := filepath.Glob("../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	return append([]string{"../README.md"}, docs...)
}

// lines reads a file as its lines, without their newlines.
func lines(t *testing.T, file string) []string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

// rel is how a failure names a file (a path from this folder): from the
// repository's root.
func rel(file string) string {
	f := filepath.ToSlash(file)
	if up, ok := strings.CutPrefix(f, "../"); ok {
		return up
	}
	return "deploy/" + f
}

// walk calls fn with every map under v and the key it is under (a list's
// items are under the list's key).
func walk(v any, fn func(key string, m map[string]any)) {
	var rec func(key string, v any)
	rec = func(key string, v any) {
		switch v := v.(type) {
		case map[string]any:
			fn(key, v)
			for k, c := range v {
				rec(k, c)
			}
		case []any:
			for _, c := range v {
				rec(key, c)
			}
		}
	}
	rec("", v)
}

// manifestFiles are the Kubernetes manifests of deploy/.
func manifestFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("kubernetes/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no kubernetes/*.yaml: %v", err)
	}
	return files
}

// TestManifestsParse: every document of every manifest parses and is an
// object (apiVersion, kind, metadata.name), or, in a patch (a file of no
// kind), a Deployment's spec.template; under a plain go test too.
func TestManifestsParse(t *testing.T) {
	for _, f := range manifestFiles(t) {
		docs := documents(t, f)
		if len(docs) == 0 {
			t.Errorf("%s holds nothing", rel(f))
		}
		for _, d := range docs {
			md, _ := d.obj["metadata"].(map[string]any)
			switch {
			case d.obj["kind"] == nil && len(docs) == 1:
				spec, _ := d.obj["spec"].(map[string]any)
				if _, ok := spec["template"].(map[string]any); !ok {
					t.Errorf("%s:%d: a patch without spec.template", rel(f), d.line)
				}
			case d.obj["apiVersion"] == nil || d.obj["kind"] == nil || md["name"] == nil:
				t.Errorf("%s:%d: an object needs apiVersion, kind and metadata.name", rel(f), d.line)
			}
		}
	}
}

// object is the part of a Kubernetes object the checks below read.
type object struct {
	Kind     string `json:"kind"`
	Metadata struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Data map[string]string `json:"data"`
	Spec struct {
		Template struct {
			Spec struct {
				TerminationGracePeriodSeconds *int64 `json:"terminationGracePeriodSeconds"`
				Containers                    []struct {
					Name string `json:"name"`
					Env  []struct {
						Name      string `json:"name"`
						Value     string `json:"value"`
						ValueFrom *struct {
							SecretKeyRef *struct {
								Name string `json:"name"`
								Key  string `json:"key"`
							} `json:"secretKeyRef"`
						} `json:"valueFrom"`
					} `json:"env"`
					VolumeMounts []struct {
						Name      string `json:"name"`
						MountPath string `json:"mountPath"`
					} `json:"volumeMounts"`
				} `json:"containers"`
				Volumes []struct {
					Name   string `json:"name"`
					Secret *struct {
						SecretName string `json:"secretName"`
						Items      []struct {
							Key  string `json:"key"`
							Path string `json:"path"`
						} `json:"items"`
					} `json:"secret"`
				} `json:"volumes"`
			} `json:"spec"`
		} `json:"template"`
	} `json:"spec"`
}

func objects(t *testing.T) []object {
	t.Helper()
	b, err := os.ReadFile(botFile)
	if err != nil {
		t.Fatal(err)
	}
	var objs []object
	for _, doc := range regexp.MustCompile(`(?m)^---[ \t]*$`).Split(string(b), -1) {
		var o object
		if err := yaml.Unmarshal([]byte(doc), &o); err != nil {
			t.Fatalf("%s: %v", botFile, err)
		}
		if o.Kind != "" {
			objs = append(objs, o)
		}
	}
	return objs
}

// knownVariables are the KUSIONPR_* names bot.LoadConfig reads, KCL's
// among them, as package settings declares them.
func knownVariables(t *testing.T) map[string]bool {
	t.Helper()
	known := map[string]bool{}
	for _, s := range settings.All() {
		if s.Var != nil && s.Var.Bot && s.Var.Name != "" {
			known[s.Var.Name] = true
		}
	}
	if len(known) < 10 {
		t.Fatalf("only %d of the bot's variables declared: has package settings changed shape?", len(known))
	}
	return known
}

// TestKubernetesVariables checks every KUSIONPR_* variable bot.yaml sets (in
// its ConfigMap, its Deployment, or mentions in a comment) is one the bot
// reads, so a misspelt setting fails here instead of being ignored.
func TestKubernetesVariables(t *testing.T) {
	known := knownVariables(t)
	set := map[string]string{} // name -> where
	var cm map[string]string
	var grace *int64
	keyFromSecret, secretVolumes := false, 0
	for _, o := range objects(t) {
		switch o.Kind {
		case "ConfigMap":
			cm = o.Data
			for k := range o.Data {
				set[k] = "ConfigMap " + o.Metadata.Name
			}
		case "Deployment":
			spec := o.Spec.Template.Spec
			grace = spec.TerminationGracePeriodSeconds
			for _, c := range spec.Containers {
				for _, e := range c.Env {
					set[e.Name] = "Deployment " + o.Metadata.Name + " container " + c.Name
					if e.Name == "KUSIONPR_APP_PRIVATE_KEY" && e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
						keyFromSecret = true
					}
				}
			}
			for _, v := range spec.Volumes {
				if v.Secret != nil {
					secretVolumes++
				}
			}
		}
	}
	for _, want := range []string{"KUSIONPR_WEBHOOK_SECRET", "KUSIONPR_APP_ID", "KUSIONPR_APP_PRIVATE_KEY", "KUSIONPR_BACKEND"} {
		if set[want] == "" {
			t.Errorf("%s does not set %s, which the bot needs", botFile, want)
		}
	}
	var names []string
	for name := range set {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if strings.HasPrefix(name, "KUSIONPR_") && !known[name] {
			t.Errorf("%s: %s sets %s, which bot.LoadConfig does not read", botFile, set[name], name)
		}
	}
	// Comments too, in every manifest: a setting someone uncomments or
	// copies must be right.
	for _, f := range manifestFiles(t) {
		for i, l := range lines(t, f) {
			for _, name := range regexp.MustCompile(`KUSIONPR_[A-Z_]*[A-Z]`).FindAllString(l, -1) {
				if !known[name] {
					t.Errorf("%s:%d mentions %s, which bot.LoadConfig does not read", rel(f), i+1, name)
				}
			}
		}
	}

	// The key reaches the bot as a variable it unsets once read; a Secret
	// mounted as a file would stay readable by every process of the bot's
	// user: Terraform, providers, module binaries.
	if !keyFromSecret {
		t.Errorf("KUSIONPR_APP_PRIVATE_KEY is not set from the Secret (secretKeyRef)")
	}
	if secretVolumes > 0 {
		t.Errorf("%s mounts %d Secret volume(s): a file the bot's children could read", botFile, secretVolumes)
	}
	drain, err := time.ParseDuration(cm["KUSIONPR_SHUTDOWN_TIMEOUT"])
	if err != nil {
		t.Fatalf("KUSIONPR_SHUTDOWN_TIMEOUT in the ConfigMap: %v", err)
	}
	if grace == nil || time.Duration(*grace)*time.Second <= drain {
		t.Errorf("terminationGracePeriodSeconds must be longer than KUSIONPR_SHUTDOWN_TIMEOUT (%s), or running applies are killed", drain)
	}
}
