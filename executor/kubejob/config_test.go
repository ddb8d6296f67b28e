package kubejob

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestSettingsPerWorkspace: a workspace's settings are the defaults with
// what it sets; a fork's preview gets the untrusted settings over them;
// settings no Job could be made with are named.
func TestSettingsPerWorkspace(t *testing.T) {
	c := Config{Image: "img", Settings: Settings{Namespace: "runs", ServiceAccount: "dev", NodeSelector: map[string]string{"pool": "a"}},
		Workspaces: map[string]Settings{"prod": {Namespace: "runs-prod", ServiceAccount: "prod", Timeout: &metav1.Duration{Duration: 2 * time.Hour}}},
		Untrusted:  &Settings{Namespace: "sandbox", ServiceAccount: "nobody"}}
	for _, tc := range []struct {
		name, ws     string
		untrusted    bool
		ns, sa, pool string
		timeout      time.Duration
	}{
		{"the defaults", "dev", false, "runs", "dev", "a", time.Hour},
		{"a workspace's own", "prod", false, "runs-prod", "prod", "a", 2 * time.Hour},
		{"a fork's preview of prod", "prod", true, "sandbox", "nobody", "a", 2 * time.Hour},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := c.For(tc.ws, tc.untrusted)
			if s.namespace() != tc.ns || s.ServiceAccount != tc.sa || s.NodeSelector["pool"] != tc.pool || s.timeout() != tc.timeout {
				t.Errorf("settings %+v, want namespace %s, ServiceAccount %s, pool %s, timeout %s", s, tc.ns, tc.sa, tc.pool, tc.timeout)
			}
		})
	}
	bad := Config{Settings: Settings{Namespace: "Not_A_Name"}, Workspaces: map[string]Settings{"prod": {TTL: &metav1.Duration{}}}}
	err := bad.Check()
	for _, want := range []string{"kubernetesJobs.image", `kubernetesJobs.namespace "Not_A_Name"`, "kubernetesJobs.workspaces.prod.ttl"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not name %s", err, want)
		}
	}
}
