package kubernetes

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNoClusterSaysWhereItLooked: with no kubeconfig to be found, the error
// names each place looked in (the spec's context, each $KUBECONFIG file,
// ~/.kube/config, the pod's ServiceAccount) and what to set, not
// client-go's "try setting KUBERNETES_MASTER".
func TestNoClusterSaysWhereItLooked(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.yaml")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "nonexistent")
	advice := []string{"KUBECONFIG_PATH or KUBECONFIG_CONTENT", "export KUBECONFIG=", "~/.kube/config"}
	for _, tc := range []struct {
		name       string
		kubeconfig string // $KUBECONFIG
		want       []string
	}{
		{"a missing file", missing, []string{"$KUBECONFIG names " + missing + ", which does not exist", "~/.kube/config was not read, as $KUBECONFIG is set"}},
		{"an empty file", empty, []string{"$KUBECONFIG names " + empty + ", which holds no current context"}},
		{"a list", missing + string(os.PathListSeparator) + empty, []string{missing + ", which does not exist", empty + ", which holds no current context"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("KUBECONFIG", tc.kubeconfig)
			t.Setenv("KUBERNETES_SERVICE_HOST", "")
			_, err := Config{}.withDefaults().restConfig()
			if err == nil {
				t.Fatal("a cluster was found")
			}
			msg := err.Error()
			for _, w := range append(append(tc.want, "not in a pod ($KUBERNETES_SERVICE_HOST is not set)"), advice...) {
				if !strings.Contains(msg, w) {
					t.Errorf("error does not say %q:\n%s", w, msg)
				}
			}
			if strings.Contains(msg, "KUBERNETES_MASTER") {
				t.Errorf("error sends the user to KUBERNETES_MASTER:\n%s", msg)
			}
		})
	}

	// Without $KUBECONFIG, ~/.kube/config is named with where it is; in a
	// pod without a token, the token's place.
	msg := noCluster(lookedIn{homeFile: missing, serviceHost: "10.0.0.1", tokenFile: missing}).Error()
	for _, w := range append([]string{"$KUBECONFIG is not set", "~/.kube/config (" + missing + ") does not exist", "no ServiceAccount token at " + missing}, advice...) {
		if !strings.Contains(msg, w) {
			t.Errorf("error does not say %q:\n%s", w, msg)
		}
	}
}

// TestOperatorKubeconfigNamed: the operator's kubeconfig (a workspace's,
// KUSIONPR_KUBECONFIGS or --kubeconfigs, or the action's input) that gives
// no cluster is named, with why.
func TestOperatorKubeconfigNamed(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.kubeconfig")
	if err := os.WriteFile(empty, []byte("apiVersion: v1\nkind: Config\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, path, why string
	}{
		{"a missing file", filepath.Join(dir, "prod.kubeconfig"), "no such file"},
		{"a file without a context", empty, "the file holds no current context"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Config{Kubeconfig: tc.path}.withDefaults().restConfig()
			if err == nil || !strings.Contains(err.Error(), "load kubeconfig "+tc.path) || !strings.Contains(err.Error(), tc.why) {
				t.Errorf("error %v, want it to name %s and say %q", err, tc.path, tc.why)
			}
			if err != nil && strings.Contains(err.Error(), "KUBERNETES_MASTER") {
				t.Errorf("error sends the user to KUBERNETES_MASTER: %v", err)
			}
		})
	}
}
