package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kusionpr/kusionpr/internal/cloudfake"
	"github.com/kusionpr/kusionpr/internal/githubfake"
	"github.com/kusionpr/kusionpr/internal/testenv"
)

// TestCloudPluginsNeverRun: with a recorder named aws,
// aws-iam-authenticator, gke-gcloud-auth-plugin and kubelogin first on
// PATH, each answering with a working cluster token, an operator's
// kubeconfig naming that plugin still previews through the token computed
// in process: the cluster's authenticator accepted a cloud token, and no
// recorder ever started.
func TestCloudPluginsNeverRun(t *testing.T) {
	clouds := testenv.CloudStandIn(t)
	server, adminToken := testenv.ClusterAccess(t)
	bin, record := t.TempDir(), filepath.Join(t.TempDir(), "started")
	credential := fmt.Sprintf(`{"apiVersion":"client.authentication.k8s.io/v1beta1","kind":"ExecCredential","status":{"token":"%s"}}`, adminToken)
	for _, name := range []string{"aws", "aws-iam-authenticator", "gke-gcloud-auth-plugin", "kubelogin"} {
		write(t, filepath.Join(bin, name), fmt.Sprintf("#!/bin/sh\necho %s >> %s\nprintf '%%s' '%s'\n", name, record, credential))
		if err := os.Chmod(filepath.Join(bin, name), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	certs := filepath.Join(t.TempDir(), "ca.pem")
	write(t, certs, string(clouds.CAPEM))
	gfile := filepath.Join(t.TempDir(), "gha-creds.json")
	write(t, gfile, string(cloudfake.GoogleCredentials(clouds.URL, "")))

	suffix := fmt.Sprintf("%06x", rand.IntN(1<<24))
	ns := "cloud-plugins-" + suffix
	kc := testenv.Kubeconfig(t)
	for _, who := range []string{cloudfake.AWSUserARN, cloudfake.GooglePrincipal, "deployer-client"} {
		name := fmt.Sprintf("kusionpr-test-%s-%08x", ns, rand.Uint32())
		if out, err := exec.Command("kubectl", "--kubeconfig", kc, "create", "clusterrolebinding", name, "--clusterrole=cluster-admin", "--user="+who).CombinedOutput(); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		t.Cleanup(func() { exec.Command("kubectl", "--kubeconfig", kc, "delete", "clusterrolebinding", name).Run() })
	}
	root := t.TempDir()
	write(t, filepath.Join(root, "infra/project.yaml"), "name: infra-"+suffix+"\n")
	write(t, filepath.Join(root, "infra/prod/stack.yaml"), "name: prod\n")
	write(t, filepath.Join(root, "infra/prod/spec.yaml"), fmt.Sprintf(`resources:
- id: v1:Namespace:%[1]s
  type: Kubernetes
  attributes: {apiVersion: v1, kind: Namespace, metadata: {name: %[1]s}}
- id: v1:ConfigMap:%[1]s:settings
  type: Kubernetes
  attributes: {apiVersion: v1, kind: ConfigMap, metadata: {name: settings, namespace: %[1]s}, data: {a: b}}
`, ns))
	gh := githubfake.New(t)
	plugins := []struct{ name, user string }{
		{"aws", "{exec: {apiVersion: client.authentication.k8s.io/v1beta1, command: aws, args: [--region, eu-west-1, eks, get-token, --cluster-name, " + cloudfake.EKSCluster + "], interactiveMode: Never}}"},
		{"aws-iam-authenticator", "{exec: {apiVersion: client.authentication.k8s.io/v1beta1, command: aws-iam-authenticator, args: [token, -i, " + cloudfake.EKSCluster + "], interactiveMode: Never}}"},
		{"gke-gcloud-auth-plugin", "{exec: {apiVersion: client.authentication.k8s.io/v1beta1, command: gke-gcloud-auth-plugin, provideClusterInfo: true, interactiveMode: IfAvailable}}"},
		{"kubelogin", "{exec: {apiVersion: client.authentication.k8s.io/v1beta1, command: kubelogin, args: [get-token, --login, workloadidentity, --server-id, " + cloudfake.AKSServerID + "], interactiveMode: IfAvailable}}"},
	}
	for i, p := range plugins {
		t.Run(p.name, func(t *testing.T) {
			number := 70 + i
			ev := prEvent(t, number, fmt.Sprintf("%040x", rand.Uint64()))
			o, r := owner(ev)
			gh.SetPullFiles(o, r, number, []githubfake.PullFile{{Filename: "infra/prod/spec.yaml", Status: "added"}})
			before := len(clouds.Accepted(t))
			env := map[string]string{
				"PATH": bin + string(os.PathListSeparator) + os.Getenv("PATH"), "KUBECONFIG": "",
				"INPUT_BACKEND":     "file://" + filepath.Join(t.TempDir(), "releases"),
				"INPUT_KUBECONFIG":  fmt.Sprintf("apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: %q, insecure-skip-tls-verify: true}}]\nusers: [{name: u, user: %s}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\ncurrent-context: c\n", server, p.user),
				"SSL_CERT_FILE":     certs,
				"AWS_ACCESS_KEY_ID": cloudfake.AWSAccessKey, "AWS_SECRET_ACCESS_KEY": cloudfake.AWSSecretKey, "AWS_REGION": "eu-west-1",
				"AWS_ENDPOINT_URL_STS": clouds.URL + "/aws/", "AWS_CONFIG_FILE": "/nonexistent", "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent",
				"GOOGLE_APPLICATION_CREDENTIALS": gfile,
				"AZURE_CLIENT_ID":                "deployer-client", "AZURE_TENANT_ID": "kusionpr-tenant", "AZURE_AUTHORITY_HOST": clouds.URL + "/",
				"ACTIONS_ID_TOKEN_REQUEST_URL": clouds.URL + "/github/token?api-version=2.0", "ACTIONS_ID_TOKEN_REQUEST_TOKEN": cloudfake.RequestToken,
			}
			if p.name == "aws-iam-authenticator" {
				// Another region than aws's --region: within the same second
				// the two would presign the same URL, which the API server
				// answers from its cache without asking the authenticator.
				env["AWS_REGION"] = "us-east-2"
			}
			run := runAction(t, gh, root, "pull_request", ev, env)
			if run.code != 0 {
				t.Fatalf("preview exited %d\n%s\n%s", run.code, run.stdout, run.stderr)
			}
			if b, err := os.ReadFile(record); err == nil {
				t.Fatalf("the plugins' commands started: %s", b)
			}
			if len(clouds.Accepted(t)) == before {
				t.Fatal("the cluster accepted no cloud token: the preview reached it otherwise")
			}
			if c := gh.Comments(o, r, number); len(c) != 1 || !strings.Contains(c[0].Body, "v1:ConfigMap:"+ns+":settings") {
				t.Errorf("comments: %+v, want the preview", c)
			}
		})
	}
}
