package cloudtoken

import (
	"context"
	"errors"
	"strings"
	"testing"

	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// TestNoCredentialsSaysWhereTheyComeFrom: a runner without any of a
// cloud's credentials is told which cloud, which identity was looked for,
// and what would have set them (the login action, the pod's workload
// identity).
func TestNoCredentialsSaysWhereTheyComeFrom(t *testing.T) {
	for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_ROLE_ARN",
		"AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
		"GOOGLE_APPLICATION_CREDENTIALS", "AZURE_CLIENT_ID", "AZURE_TENANT_ID", "AZURE_FEDERATED_TOKEN_FILE",
		"ACTIONS_ID_TOKEN_REQUEST_URL", "ACTIONS_ID_TOKEN_REQUEST_TOKEN"} {
		t.Setenv(k, "")
	}
	t.Setenv("AWS_CONFIG_FILE", "/nonexistent")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
	// Not an EC2 instance's metadata, whatever machine runs the test (off
	// GCE, which this sandbox and CI are, ADC finds none either).
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("HOME", t.TempDir())
	t.Setenv("CLOUDSDK_CONFIG", t.TempDir())
	for _, tc := range []struct {
		exec *clientcmdapi.ExecConfig
		want []string
	}{
		{&clientcmdapi.ExecConfig{Command: "aws", Args: []string{"eks", "get-token", "--cluster-name", "prod", "--region", "eu-west-1"}},
			[]string{"eks token for cluster prod, the default AWS credential chain: getting AWS credentials: no AWS credentials in the environment", "aws-actions/configure-aws-credentials", "IRSA"}},
		{&clientcmdapi.ExecConfig{Command: "gke-gcloud-auth-plugin"},
			[]string{"gke token for Application Default Credentials: finding credentials", "google-github-actions/auth sets GOOGLE_APPLICATION_CREDENTIALS"}},
		{&clientcmdapi.ExecConfig{Command: "kubelogin", Args: []string{"get-token", "--login", "workloadidentity"}},
			[]string{"aks token for server app " + DefaultAKSServerID + ", login workloadidentity", "no federated token", "id-token: write"}},
	} {
		t.Run(tc.exec.Command, func(t *testing.T) {
			p, err := Recognise(tc.exec)
			if err != nil {
				t.Fatal(err)
			}
			src, err := NewSource(context.Background(), p, Options{})
			if err == nil {
				_, err = src.Token(context.Background())
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("err = %v, want a cloudtoken.Error", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%v\nlacks %q", err, w)
				}
			}
		})
	}
}
