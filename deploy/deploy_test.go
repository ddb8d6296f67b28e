package deploy_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/kusionpr/kusionpr/internal/testenv"
)

const (
	manifestFile = "github-app-manifest.json"
	botFile      = "kubernetes/bot.yaml"
	jobsFile     = "kubernetes/jobs.yaml"
	namespace    = "kusionpr"
)

// TestAppManifest checks the GitHub App manifest asks for the events the bot
// handles and the permissions its API calls need.
func TestAppManifest(t *testing.T) {
	b, err := os.ReadFile(manifestFile)
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
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
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v", manifestFile, err)
	}
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

// TestKubernetesServerDryRun has a real API server validate every object of
// bot.yaml (a server-side dry run). The namespace must exist for the
// namespaced objects; it is created if missing and removed afterwards.
func TestKubernetesServerDryRun(t *testing.T) {
	kc := testenv.Kubeconfig(t)
	kubectl := func(args ...string) (string, error) {
		out, err := exec.Command("kubectl", append([]string{"--kubeconfig", kc}, args...)...).CombinedOutput()
		return string(out), err
	}
	// A dry run cannot make a namespace for the objects in it: each file's
	// namespace is made first.
	ensureNamespace := func(ns string) {
		phase, err := kubectl("get", "namespace", ns, "-o", "jsonpath={.status.phase}")
		if err == nil && phase == "Terminating" {
			// Left by an earlier run: wait until it is gone.
			if out, err := kubectl("wait", "--for=delete", "namespace/"+ns, "--timeout=120s"); err != nil {
				t.Fatalf("namespace %s is terminating: %v\n%s", ns, err, out)
			}
			err = os.ErrNotExist
		}
		if err != nil {
			out, err := kubectl("create", "namespace", ns, "--save-config")
			switch {
			case err == nil:
				t.Cleanup(func() {
					if out, err := kubectl("delete", "namespace", ns, "--ignore-not-found", "--wait=false"); err != nil {
						t.Logf("delete namespace %s: %v\n%s", ns, err, out)
					}
				})
			case strings.Contains(out, "AlreadyExists"):
			default:
				t.Fatalf("create namespace %s: %v\n%s", ns, err, out)
			}
		}
	}
	for _, f := range []struct{ file, ns string }{{botFile, namespace}, {jobsFile, "kusionpr-runs"}} {
		ensureNamespace(f.ns)
		out, err := kubectl("apply", "--dry-run=server", "-f", f.file)
		if err != nil {
			t.Fatalf("kubectl apply --dry-run=server -f %s: %v\n%s", f.file, err, out)
		}
		t.Logf("kubectl apply --dry-run=server -f %s:\n%s", f.file, out)
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

// knownVariables are the KUSIONPR_* names bot.LoadConfig reads.
func knownVariables(t *testing.T) map[string]bool {
	t.Helper()
	b, err := os.ReadFile("../bot/config.go")
	if err != nil {
		t.Fatal(err)
	}
	known := map[string]bool{}
	for _, m := range regexp.MustCompile(`"(KUSIONPR_[A-Z_]+)"`).FindAllStringSubmatch(string(b), -1) {
		known[m[1]] = true
	}
	if len(known) < 10 {
		t.Fatalf("only %d KUSIONPR_ names found in ../bot/config.go: has LoadConfig changed shape?", len(known))
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
	// Comments too: a setting someone uncomments must be right.
	b, _ := os.ReadFile(botFile)
	for _, name := range regexp.MustCompile(`KUSIONPR_[A-Z_]*[A-Z]`).FindAllString(string(b), -1) {
		if !known[name] {
			t.Errorf("%s mentions %s, which bot.LoadConfig does not read", botFile, name)
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
