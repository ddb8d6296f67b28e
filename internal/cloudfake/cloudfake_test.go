package cloudfake_test

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/pem"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	authnv1 "k8s.io/api/authentication/v1"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kusionpr/kusionpr/internal/cloudfake"
	"github.com/kusionpr/kusionpr/runtime/kubernetes/cloudtoken"
)

func serve(t *testing.T) (*httptest.Server, *cloudfake.Server) {
	t.Helper()
	srv := httptest.NewUnstartedServer(nil)
	srv.StartTLS()
	t.Cleanup(srv.Close)
	fake, err := cloudfake.New(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	srv.Config.Handler = fake.Handler()
	return srv, fake
}

// review asks the authenticator about tok, as the API server does.
func review(t *testing.T, srv *httptest.Server, tok string) authnv1.TokenReviewStatus {
	t.Helper()
	body, _ := json.Marshal(authnv1.TokenReview{Spec: authnv1.TokenReviewSpec{Token: tok}})
	resp, err := srv.Client().Post(srv.URL+"/authenticate", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out authnv1.TokenReview
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	return out.Status
}

func token(t *testing.T, exec *clientcmdapi.ExecConfig, opts cloudtoken.Options) string {
	t.Helper()
	p, err := cloudtoken.Recognise(exec)
	if err != nil {
		t.Fatal(err)
	}
	src, err := cloudtoken.NewSource(context.Background(), p, opts)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := src.Token(context.Background())
	if err != nil {
		t.Fatalf("token: %v", err)
	}
	return tok.Value
}

// githubToken fetches a GitHub OIDC token as a login action does.
func githubToken(t *testing.T, srv *httptest.Server, audience string) string {
	t.Helper()
	tok, err := cloudfake.GitHubToken(context.Background(), srv.Client(), srv.URL, audience)
	if err != nil {
		t.Fatalf("GitHub token: %v", err)
	}
	return tok
}

// TestEKS: the SDK's presigned URL passes the SigV4 check for the
// cluster it names, and no other; a tampered or foreign-key URL fails.
// Credentials from AssumeRoleWithWebIdentity (configure-aws-credentials'
// exchange of the job's token) sign as the assumed role.
func TestEKS(t *testing.T) {
	srv, _ := serve(t)
	t.Setenv("AWS_ENDPOINT_URL_STS", srv.URL+"/aws/")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
	exec := func(cluster string, env ...clientcmdapi.ExecEnvVar) *clientcmdapi.ExecConfig {
		return &clientcmdapi.ExecConfig{Command: "aws", Args: []string{"eks", "get-token", "--cluster-name", cluster, "--region", "eu-west-1"}, Env: env}
	}
	keys := []clientcmdapi.ExecEnvVar{{Name: "AWS_ACCESS_KEY_ID", Value: cloudfake.AWSAccessKey}, {Name: "AWS_SECRET_ACCESS_KEY", Value: cloudfake.AWSSecretKey}}
	tok := token(t, exec(cloudfake.EKSCluster, keys...), cloudtoken.Options{})
	if st := review(t, srv, tok); !st.Authenticated || st.User.Username != cloudfake.AWSUserARN {
		t.Fatalf("the SDK's token: %+v, want %s", st, cloudfake.AWSUserARN)
	}
	if st := review(t, srv, token(t, exec("another-cluster", keys...), cloudtoken.Options{})); st.Authenticated {
		t.Error("a token presigned for another cluster was accepted")
	}
	wrong := []clientcmdapi.ExecEnvVar{keys[0], {Name: "AWS_SECRET_ACCESS_KEY", Value: "not-the-secret"}}
	if st := review(t, srv, token(t, exec(cloudfake.EKSCluster, wrong...), cloudtoken.Options{})); st.Authenticated || !strings.Contains(st.Error, "signature") {
		t.Errorf("a token signed with the wrong secret: %+v", st)
	}
	if st := review(t, srv, strings.Replace(tok, "A", "B", 1)); st.Authenticated {
		t.Error("a tampered token was accepted")
	}

	cfg, err := config.LoadDefaultConfig(context.Background(), config.WithRegion("eu-west-1"), config.WithCredentialsProvider(aws.AnonymousCredentials{}))
	if err != nil {
		t.Fatal(err)
	}
	cfg.HTTPClient = srv.Client()
	out, err := sts.NewFromConfig(cfg).AssumeRoleWithWebIdentity(context.Background(), &sts.AssumeRoleWithWebIdentityInput{
		RoleArn: aws.String("arn:aws:iam::" + cloudfake.AWSAccount + ":role/deployer"), RoleSessionName: aws.String("GitHubActions"),
		WebIdentityToken: aws.String(githubToken(t, srv, "sts.amazonaws.com")),
	})
	if err != nil {
		t.Fatalf("AssumeRoleWithWebIdentity: %v", err)
	}
	c := out.Credentials
	role := token(t, exec(cloudfake.EKSCluster, clientcmdapi.ExecEnvVar{Name: "AWS_ACCESS_KEY_ID", Value: *c.AccessKeyId},
		clientcmdapi.ExecEnvVar{Name: "AWS_SECRET_ACCESS_KEY", Value: *c.SecretAccessKey}, clientcmdapi.ExecEnvVar{Name: "AWS_SESSION_TOKEN", Value: *c.SessionToken}), cloudtoken.Options{})
	if st := review(t, srv, role); !st.Authenticated || st.User.Username != "arn:aws:sts::"+cloudfake.AWSAccount+":assumed-role/deployer/GitHubActions" {
		t.Errorf("the assumed role's token: %+v", st)
	}
	if _, err := sts.NewFromConfig(cfg).AssumeRoleWithWebIdentity(context.Background(), &sts.AssumeRoleWithWebIdentityInput{
		RoleArn: aws.String("arn:aws:iam::" + cloudfake.AWSAccount + ":role/deployer"), RoleSessionName: aws.String("x"),
		WebIdentityToken: aws.String(githubToken(t, srv, "another-audience")),
	}); err == nil {
		t.Error("a GitHub token for another audience was exchanged")
	}
}

// TestGKE: credentials as google-github-actions/auth writes them (the
// job's token from ACTIONS_ID_TOKEN_REQUEST_URL, exchanged at STS, then a
// service account impersonated) give a token the authenticator names as
// the service account; without impersonation, as the federated principal.
func TestGKE(t *testing.T) {
	srv, _ := serve(t)
	creds := func(impersonate string) string {
		f := filepath.Join(t.TempDir(), "gha-creds.json")
		if err := os.WriteFile(f, cloudfake.GoogleCredentials(srv.URL, impersonate), 0o600); err != nil {
			t.Fatal(err)
		}
		return f
	}
	opts := cloudtoken.Options{HTTPClient: srv.Client()}
	for _, tc := range []struct{ impersonate, want string }{
		{"deployer@kusionpr-test.iam.gserviceaccount.com", "deployer@kusionpr-test.iam.gserviceaccount.com"},
		{"", cloudfake.GooglePrincipal},
	} {
		exec := &clientcmdapi.ExecConfig{Command: "gke-gcloud-auth-plugin", Env: []clientcmdapi.ExecEnvVar{{Name: "GOOGLE_APPLICATION_CREDENTIALS", Value: creds(tc.impersonate)}}}
		if st := review(t, srv, token(t, exec, opts)); !st.Authenticated || st.User.Username != tc.want {
			t.Errorf("impersonating %q: %+v, want %s", tc.impersonate, st, tc.want)
		}
	}
	if st := review(t, srv, "ya29.not-issued"); st.Authenticated {
		t.Error("a token never issued was accepted")
	}
}

// TestAKS: kubelogin's workload identity in a GitHub Actions job (the
// job's token exchanged at Entra ID) gives a token the authenticator
// names as the client; a token for another application is refused.
func TestAKS(t *testing.T) {
	srv, _ := serve(t)
	exec := func(server string) *clientcmdapi.ExecConfig {
		return &clientcmdapi.ExecConfig{Command: "kubelogin", Args: []string{"get-token", "--login", "workloadidentity", "--server-id", server}, Env: []clientcmdapi.ExecEnvVar{
			{Name: "AZURE_CLIENT_ID", Value: "deployer-client"}, {Name: "AZURE_TENANT_ID", Value: "kusionpr-tenant"},
			{Name: "AZURE_AUTHORITY_HOST", Value: srv.URL + "/"},
			{Name: "ACTIONS_ID_TOKEN_REQUEST_URL", Value: srv.URL + "/github/token?api-version=2.0"},
			{Name: "ACTIONS_ID_TOKEN_REQUEST_TOKEN", Value: cloudfake.RequestToken},
		}}
	}
	opts := cloudtoken.Options{HTTPClient: srv.Client(), Getenv: func(string) string { return "" },
		Azure: cloudtoken.AzureOptions{ClientOptions: azcore.ClientOptions{Transport: srv.Client()}}}
	if st := review(t, srv, token(t, exec(cloudfake.AKSServerID), opts)); !st.Authenticated || st.User.Username != "deployer-client" {
		t.Errorf("the AKS token: %+v", st)
	}
	if st := review(t, srv, token(t, exec("api://another-app"), opts)); st.Authenticated {
		t.Error("a token for another application was accepted")
	}
}

// TestPodWorkloadIdentity: the bot's pod with IRSA (AWS_ROLE_ARN and a
// projected token file, which the AWS SDK trades at STS itself) and with
// Azure Workload Identity (AZURE_FEDERATED_TOKEN_FILE) gets tokens the
// authenticator names as the role and the client. The token files hold
// what the stand-in's issuer signs, as the cluster's would be.
func TestPodWorkloadIdentity(t *testing.T) {
	srv, _ := serve(t)
	dir := t.TempDir()
	ca := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	awsToken, azureToken := filepath.Join(dir, "aws-token"), filepath.Join(dir, "azure-token")
	if err := os.WriteFile(awsToken, []byte(githubToken(t, srv, "sts.amazonaws.com")), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(azureToken, []byte(githubToken(t, srv, "api://AzureADTokenExchange")), 0o600); err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{
		"AWS_ROLE_ARN": "arn:aws:iam::" + cloudfake.AWSAccount + ":role/kusionpr-bot", "AWS_WEB_IDENTITY_TOKEN_FILE": awsToken,
		"AWS_ROLE_SESSION_NAME": "bot", "AWS_REGION": "eu-west-1", "AWS_ENDPOINT_URL_STS": srv.URL + "/aws/", "AWS_CA_BUNDLE": ca,
		"AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": "", "AWS_PROFILE": "", "AWS_EC2_METADATA_DISABLED": "true",
		"AWS_CONFIG_FILE": filepath.Join(dir, "none"), "AWS_SHARED_CREDENTIALS_FILE": filepath.Join(dir, "none"),
	} {
		t.Setenv(k, v)
	}
	eks := &clientcmdapi.ExecConfig{Command: "aws", Args: []string{"eks", "get-token", "--cluster-name", cloudfake.EKSCluster}}
	if st := review(t, srv, token(t, eks, cloudtoken.Options{})); !st.Authenticated || st.User.Username != "arn:aws:sts::"+cloudfake.AWSAccount+":assumed-role/kusionpr-bot/bot" {
		t.Errorf("IRSA: %+v", st)
	}

	aks := &clientcmdapi.ExecConfig{Command: "kubelogin", Args: []string{"get-token", "--login", "workloadidentity", "--server-id", cloudfake.AKSServerID}}
	env := map[string]string{"AZURE_CLIENT_ID": "bot-client", "AZURE_TENANT_ID": "kusionpr-tenant", "AZURE_FEDERATED_TOKEN_FILE": azureToken, "AZURE_AUTHORITY_HOST": srv.URL + "/"}
	opts := cloudtoken.Options{Getenv: func(k string) string { return env[k] },
		Azure: cloudtoken.AzureOptions{ClientOptions: azcore.ClientOptions{Transport: srv.Client()}}}
	if st := review(t, srv, token(t, aks, opts)); !st.Authenticated || st.User.Username != "bot-client" {
		t.Errorf("Azure Workload Identity: %+v", st)
	}
}
