package image

import (
	"context"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/sts"

	"github.com/kusionpr/kusionpr/internal/cloudfake"
	"github.com/kusionpr/kusionpr/internal/githubfake"
	"github.com/kusionpr/kusionpr/internal/testenv"
)

// cloudCLIs are the commands a managed cluster's kubeconfig names, and
// the CLIs around them; the image carries none.
var cloudCLIs = []string{"aws", "aws-iam-authenticator", "gke-gcloud-auth-plugin", "gcloud", "kubelogin", "az"}

// TestImageReachesManagedClusters: the action's image, run as the runner
// runs it, previews a pull request and applies its merge on the test
// cluster through an EKS, a GKE and an AKS kubeconfig as each cloud's CLI
// writes it (an exec plugin the image does not have), with only the
// environment that cloud's login action leaves in a job that may ask for
// an OIDC token. The cluster accepts the tokens through the environment's
// webhook authenticator, which checks them as each cloud does. No token
// the cluster accepted, and no credential the job held, appears in the
// step's output, summary, outputs, comments, check runs or releases.
func TestImageReachesManagedClusters(t *testing.T) {
	b := newBuildah(t)
	clouds := testenv.CloudStandIn(t)
	server, _ := testenv.ClusterAccess(t)
	gh := githubfake.NewTLS(t)

	// The image holds none of the plugins' commands.
	ctr := b.container(t)
	root := b.output(t, "mount", ctr)
	t.Cleanup(func() { b.command(context.Background(), "umount", ctr).Run() })
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && slices.Contains(cloudCLIs, d.Name()) {
			t.Errorf("the image carries %s", strings.TrimPrefix(p, root))
		}
		return nil
	})

	clouds3 := []struct {
		name, user string
		// login is the environment the cloud's login action leaves, and
		// who the cluster then sees; secrets are what else must stay unsaid.
		login func(t *testing.T, j *job) (env map[string]string, identity string, secrets []string)
	}{
		{"eks", "{exec: {apiVersion: client.authentication.k8s.io/v1beta1, command: aws, args: [--region, eu-west-1, eks, get-token, --cluster-name, " + cloudfake.EKSCluster + ", --output, json], interactiveMode: Never}}",
			func(t *testing.T, j *job) (map[string]string, string, []string) {
				// aws-actions/configure-aws-credentials with role-to-assume:
				// the job's token traded at STS, the keys left in the env.
				cfg, err := config.LoadDefaultConfig(context.Background(), config.WithRegion("eu-west-1"), config.WithCredentialsProvider(aws.AnonymousCredentials{}))
				if err != nil {
					t.Fatal(err)
				}
				cfg.HTTPClient = clouds.Client
				out, err := sts.NewFromConfig(cfg, func(o *sts.Options) { o.BaseEndpoint = aws.String(clouds.URL + "/aws/") }).AssumeRoleWithWebIdentity(context.Background(), &sts.AssumeRoleWithWebIdentityInput{
					RoleArn: aws.String("arn:aws:iam::" + cloudfake.AWSAccount + ":role/deployer"), RoleSessionName: aws.String("GitHubActions"),
					WebIdentityToken: aws.String(githubOIDC(t, clouds, "sts.amazonaws.com")),
				})
				if err != nil {
					t.Fatalf("AssumeRoleWithWebIdentity: %v", err)
				}
				c := out.Credentials
				return map[string]string{
					"AWS_ACCESS_KEY_ID": *c.AccessKeyId, "AWS_SECRET_ACCESS_KEY": *c.SecretAccessKey, "AWS_SESSION_TOKEN": *c.SessionToken,
					"AWS_REGION": "eu-west-1", "AWS_DEFAULT_REGION": "eu-west-1",
					// Where STS is: the stand-in's, in place of sts.eu-west-1.amazonaws.com.
					"AWS_ENDPOINT_URL_STS": clouds.URL + "/aws/",
				}, "arn:aws:sts::" + cloudfake.AWSAccount + ":assumed-role/deployer/GitHubActions", []string{*c.SecretAccessKey, *c.SessionToken}
			}},
		{"gke", "{exec: {apiVersion: client.authentication.k8s.io/v1beta1, command: gke-gcloud-auth-plugin, installHint: 'Install gke-gcloud-auth-plugin for use with kubectl', provideClusterInfo: true, interactiveMode: IfAvailable}}",
			func(t *testing.T, j *job) (map[string]string, string, []string) {
				// google-github-actions/auth with workload_identity_provider
				// and service_account: its credentials file in the
				// workspace, naming the job's token endpoint.
				account := "deployer@kusionpr-test.iam.gserviceaccount.com"
				creds := cloudfake.GoogleCredentials(clouds.URL, account)
				j.checkout(map[string]string{"gha-creds-5f0d7a2c.json": string(creds)})
				file := "/github/workspace/gha-creds-5f0d7a2c.json"
				return map[string]string{
					"GOOGLE_APPLICATION_CREDENTIALS": file, "CLOUDSDK_AUTH_CREDENTIAL_FILE_OVERRIDE": file, "GOOGLE_GHA_CREDS_PATH": file,
					"CLOUDSDK_CORE_PROJECT": "kusionpr-test", "CLOUDSDK_PROJECT": "kusionpr-test", "GCLOUD_PROJECT": "kusionpr-test",
					"GCP_PROJECT": "kusionpr-test", "GOOGLE_CLOUD_PROJECT": "kusionpr-test",
				}, account, nil
			}},
		{"aks", "{exec: {apiVersion: client.authentication.k8s.io/v1beta1, command: kubelogin, args: [get-token, --login, workloadidentity, --server-id, " + cloudfake.AKSServerID + "], interactiveMode: IfAvailable}}",
			func(t *testing.T, j *job) (map[string]string, string, []string) {
				// azure/login with OIDC logs az in and leaves nothing; the
				// workflow names the client and tenant, as its docs show.
				return map[string]string{
					"AZURE_CLIENT_ID": "deployer-client", "AZURE_TENANT_ID": "kusionpr-tenant",
					// Where Entra ID is: the stand-in's, in place of login.microsoftonline.com.
					"AZURE_AUTHORITY_HOST": clouds.URL + "/",
				}, "deployer-client", nil
			}},
	}
	for _, cl := range clouds3 {
		t.Run(cl.name, func(t *testing.T) {
			j := newJob(t, b)
			env, identity, secrets := cl.login(t, j)
			suffix := fmt.Sprintf("%06x", rand.IntN(1<<24))
			ns := "cloud-" + cl.name + "-" + suffix
			grant(t, identity, ns)
			t.Cleanup(func() {
				exec.Command("kubectl", "--kubeconfig", testenv.Kubeconfig(t), "delete", "namespace", ns, "--ignore-not-found", "--wait=false").Run()
			})
			const stack = "infra/prod"
			j.checkout(map[string]string{
				"infra/project.yaml":  "name: infra-" + suffix + "\n",
				stack + "/stack.yaml": "name: prod\n",
				stack + "/spec.yaml": fmt.Sprintf(`resources:
- id: v1:Namespace:%[1]s
  type: Kubernetes
  attributes: {apiVersion: v1, kind: Namespace, metadata: {name: %[1]s}}
- id: v1:ConfigMap:%[1]s:settings
  type: Kubernetes
  attributes: {apiVersion: v1, kind: ConfigMap, metadata: {name: settings, namespace: %[1]s}, data: {cloud: %[2]s}}
`, ns, cl.name),
			})
			ca := filepath.Join(j.temp, "ca")
			if err := os.MkdirAll(ca, 0o755); err != nil {
				t.Fatal(err)
			}
			for name, pem := range map[string][]byte{"github.pem": gh.CAPEM, "clouds.pem": clouds.CAPEM} {
				if err := os.WriteFile(filepath.Join(ca, name), pem, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			j.chown(ca, true)
			kubeconfig := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: %[1]s, cluster: {server: %[2]q, insecure-skip-tls-verify: true}}]
users: [{name: %[1]s, user: %[3]s}]
contexts: [{name: %[1]s, context: {cluster: %[1]s, user: %[1]s}}]
current-context: %[1]s
`, cl.name, server, cl.user)
			inputs := map[string]string{"kubeconfig": kubeconfig}
			env["GITHUB_API_URL"] = strings.TrimSuffix(gh.URL, "/")
			env["SSL_CERT_DIR"] = "/github/runner_temp/ca"
			// permissions: id-token: write
			env["ACTIONS_ID_TOKEN_REQUEST_URL"] = clouds.URL + "/github/token?api-version=2.0"
			env["ACTIONS_ID_TOKEN_REQUEST_TOKEN"] = cloudfake.RequestToken
			before := len(clouds.Accepted(t))

			number := 50 + rand.IntN(1000)
			ev := githubfake.Event(t, "pull_request", "synchronize")
			pr := ev["pull_request"].(map[string]any)
			pr["number"], ev["number"] = float64(number), float64(number)
			full := fmt.Sprint(ev["repository"].(map[string]any)["full_name"])
			o, r, _ := strings.Cut(full, "/")
			gh.SetPullFiles(o, r, number, []githubfake.PullFile{{Filename: stack + "/spec.yaml", Status: "added"}})
			preview := j.run("pull_request", ev, inputs, env)
			if preview.code != 0 {
				t.Fatalf("preview exited %d\nstdout:\n%s\nstderr:\n%s", preview.code, preview.stdout, preview.stderr)
			}
			comments := gh.Comments(o, r, number)
			if len(comments) != 1 || !strings.Contains(comments[0].Body, "v1:ConfigMap:"+ns+":settings") {
				t.Fatalf("comments on #%d: %+v, want a preview of the ConfigMap", number, comments)
			}

			push := githubfake.Event(t, "push", "")
			sha := fmt.Sprintf("%040x", rand.Uint64())
			push["after"] = sha
			gh.SetCommitPulls(o, r, sha, []int{number})
			apply := j.run("push", push, inputs, env)
			if apply.code != 0 {
				t.Fatalf("apply exited %d\nstdout:\n%s\nstderr:\n%s", apply.code, apply.stdout, apply.stderr)
			}
			if got := kubectl(t, "get", "configmap", "settings", "-n", ns, "-o", "jsonpath={.data.cloud}"); got != cl.name {
				t.Errorf("the applied ConfigMap's data.cloud = %q, want %q", got, cl.name)
			}

			accepted := clouds.Accepted(t)[before:]
			if len(accepted) == 0 {
				t.Fatal("the cluster accepted no token of the cloud: the action reached it otherwise")
			}
			var said []string
			for _, run := range []run{preview, apply} {
				said = append(said, run.stdout, run.stderr, run.summary, fmt.Sprint(run.outputs))
			}
			for _, c := range gh.Comments(o, r, number) {
				said = append(said, c.Body)
			}
			for _, c := range gh.CheckRuns(o, r) {
				said = append(said, fmt.Sprintf("%+v", c))
			}
			filepath.WalkDir(filepath.Join(j.home, ".kusion"), func(p string, d fs.DirEntry, err error) error {
				if err == nil && !d.IsDir() {
					b, _ := os.ReadFile(p)
					said = append(said, string(b))
				}
				return nil
			})
			for _, secret := range append(append(accepted, secrets...), cloudfake.RequestToken) {
				for _, s := range said {
					if strings.Contains(s, secret) {
						t.Errorf("a token or credential (%d characters) appears in what the action wrote:\n%s", len(secret), s)
						break
					}
				}
			}
		})
	}
}

// grant lets the cloud identity, as the authenticator names it, create
// its namespace and everything in it.
func grant(t *testing.T, identity, ns string) {
	t.Helper()
	name := "kusionpr-test-" + ns
	kubectl(t, "create", "clusterrolebinding", name, "--clusterrole=cluster-admin", "--user="+identity)
	t.Cleanup(func() {
		exec.Command("kubectl", "--kubeconfig", testenv.Kubeconfig(t), "delete", "clusterrolebinding", name, "--ignore-not-found").Run()
	})
}

// githubOIDC fetches the job's OIDC token for audience, as a login action
// does.
func githubOIDC(t *testing.T, clouds testenv.Clouds, audience string) string {
	t.Helper()
	tok, err := cloudfake.GitHubToken(context.Background(), clouds.Client, clouds.URL, audience)
	if err != nil {
		t.Fatalf("the job's OIDC token: %v", err)
	}
	return tok
}
