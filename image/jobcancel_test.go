package image

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kusionpr/kusionpr/backend"
	"github.com/kusionpr/kusionpr/internal/testenv"
	"github.com/kusionpr/kusionpr/model"
)

// TestJobIsCancelled: a Job of the image applying a Deployment that
// cannot start (no node matches it) and ConfigMaps that wait for it is
// asked, through the release store, to stop: the worker sees it at its
// next heartbeat (the bot's 5 s lease: every second), cuts the wait short,
// applies nothing more and ends its release failed, saying who cancelled;
// the ConfigMaps were never applied.
func TestJobIsCancelled(t *testing.T) {
	b := newBuildah(t)
	client := testenv.Client(t)
	jobs, target, suffix := jobNamespaces(t, client, "image-canceljobs-", "image-cancel-")
	project := "cancel-" + suffix
	var spec strings.Builder
	fmt.Fprintf(&spec, `resources:
- id: apps/v1:Deployment:%[1]s:web
  type: Kubernetes
  attributes:
    apiVersion: apps/v1
    kind: Deployment
    metadata: {name: web, namespace: %[1]s}
    spec:
      replicas: 1
      selector: {matchLabels: {app: web}}
      template:
        metadata: {labels: {app: web}}
        spec:
          nodeSelector: {kusionpr-test/nowhere: "yes"}
          containers: [{name: web, image: nginx}]
`, target)
	for i := range 5 {
		fmt.Fprintf(&spec, "- id: v1:ConfigMap:%[1]s:after-%[2]d\n  type: Kubernetes\n  dependsOn: [apps/v1:Deployment:%[1]s:web]\n  attributes: {apiVersion: v1, kind: ConfigMap, metadata: {name: after-%[2]d, namespace: %[1]s}}\n", target, i)
	}
	var asked time.Time
	r, log := runJobWith(t, b, client, jobs, map[string]string{
		"infra/project.yaml":   "name: " + project + "\n",
		"infra/dev/stack.yaml": "name: dev\n",
		"infra/dev/spec.yaml":  spec.String(),
	}, nil, jobOptions{lease: 5 * time.Second, during: func(bucket string) {
		ctx := context.Background()
		s, err := backend.Open(ctx, bucket)
		if err != nil {
			t.Error(err)
			return
		}
		defer s.Close()
		deadline := time.Now().Add(2 * time.Minute)
		for time.Now().Before(deadline) {
			rel, err := s.Latest(ctx, project, "default")
			_, derr := client.AppsV1().Deployments(target).Get(ctx, "web", metav1.GetOptions{})
			if err == nil && rel != nil && rel.Phase == model.PhaseApplying && derr == nil {
				if _, _, err := s.RequestCancel(ctx, project, "default", "alice", "wrong image"); err != nil {
					t.Error(err)
				}
				asked = time.Now()
				return
			}
			time.Sleep(200 * time.Millisecond)
		}
		t.Error("the Job's apply never waited for the Deployment")
	}})
	t.Logf("the Job's run ended %s after the cancel was asked", time.Since(asked).Round(100*time.Millisecond))
	if r.Release == nil || r.Release.Phase != model.PhaseFailed || !strings.HasPrefix(r.Release.Message, "cancelled by alice at ") || !strings.Contains(r.Release.Message, "wrong image") {
		t.Fatalf("the cancelled run as the bot sees it: %v, %+v\nthe container's log:\n%s", r.Err, r.Release, log)
	}
	for i := range 5 {
		if _, err := client.CoreV1().ConfigMaps(target).Get(context.Background(), fmt.Sprintf("after-%d", i), metav1.GetOptions{}); err == nil {
			t.Errorf("after-%d was applied after the cancel", i)
		}
	}
}
