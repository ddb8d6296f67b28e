package deploy_test

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestWorkloadIdentityServiceAccounts: each cloud's ServiceAccount in
// deploy/kubernetes/workload-identity is the bot's (the name and namespace
// bot.yaml's Deployment runs as), carries that cloud's annotation, and the
// API server takes it (kubectl apply --dry-run=server).
func TestWorkloadIdentityServiceAccounts(t *testing.T) {
	want := map[string]string{
		"eks.yaml": "eks.amazonaws.com/role-arn",
		"gke.yaml": "iam.gke.io/gcp-service-account",
		"aks.yaml": "azure.workload.identity/client-id",
	}
	files, err := filepath.Glob("kubernetes/workload-identity/*.yaml")
	if err != nil || len(files) != len(want) {
		t.Fatalf("kubernetes/workload-identity holds %v, want %d files", files, len(want))
	}
	ensureNamespace(t, namespace)
	for _, f := range files {
		docs := documents(t, f)
		if len(docs) != 1 {
			t.Fatalf("%s: %d documents, want one ServiceAccount", f, len(docs))
		}
		md, _ := docs[0].obj["metadata"].(map[string]any)
		ann, _ := md["annotations"].(map[string]any)
		if docs[0].obj["kind"] != "ServiceAccount" || md["name"] != "kusionpr-bot" || md["namespace"] != namespace || ann[want[filepath.Base(f)]] == nil {
			t.Errorf("%s: %v %v/%v with annotations %v, want the bot's ServiceAccount with %s", f, docs[0].obj["kind"], md["namespace"], md["name"], ann, want[filepath.Base(f)])
		}
		if out, err := kubectl(t, "", "apply", "--dry-run=server", "-f", f); err != nil || !strings.Contains(out, "serviceaccount/kusionpr-bot") {
			t.Errorf("kubectl apply --dry-run=server -f %s: %v\n%s", f, err, out)
		}
	}
}
