package cloudtoken

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

func TestRecognise(t *testing.T) {
	env := func(kv ...string) []clientcmdapi.ExecEnvVar {
		var out []clientcmdapi.ExecEnvVar
		for i := 0; i+1 < len(kv); i += 2 {
			out = append(out, clientcmdapi.ExecEnvVar{Name: kv[i], Value: kv[i+1]})
		}
		return out
	}
	tests := []struct {
		name    string
		exec    *clientcmdapi.ExecConfig
		want    Plugin
		wantErr error // ErrNotRecognised, or nil; other errors checked by errText
		errText string
	}{
		{
			name: "aws eks get-token as eksctl writes it",
			exec: &clientcmdapi.ExecConfig{Command: "aws", Args: []string{"eks", "get-token", "--output", "json", "--cluster-name", "demo", "--region", "eu-west-1"}},
			want: Plugin{Cloud: EKS, EKS: EKSParams{ClusterName: "demo", Region: "eu-west-1"}},
		},
		{
			name: "aws eks update-kubeconfig layout: global region before the subcommand, role, = values",
			exec: &clientcmdapi.ExecConfig{Command: "/usr/local/bin/aws", Args: []string{"--region", "us-west-2", "eks", "get-token", "--cluster-name=prod", "--role-arn", "arn:aws:iam::111122223333:role/deployer", "--profile", "ops"}},
			want: Plugin{Cloud: EKS, EKS: EKSParams{ClusterName: "prod", Region: "us-west-2", RoleARN: "arn:aws:iam::111122223333:role/deployer", Profile: "ops"}},
		},
		{
			name: "aws eks get-token region and profile from the exec env",
			exec: &clientcmdapi.ExecConfig{Command: "aws", Args: []string{"eks", "get-token", "--cluster-name", "demo"}, Env: env("AWS_REGION", "ap-south-1", "AWS_PROFILE", "p")},
			want: Plugin{Cloud: EKS, EKS: EKSParams{ClusterName: "demo", Region: "ap-south-1", Profile: "p"}},
		},
		{
			name: "aws eks get-token AWS_DEFAULT_REGION",
			exec: &clientcmdapi.ExecConfig{Command: "aws.exe", Args: []string{"eks", "get-token", "--cluster-name", "demo"}, Env: env("AWS_DEFAULT_REGION", "sa-east-1")},
			want: Plugin{Cloud: EKS, EKS: EKSParams{ClusterName: "demo", Region: "sa-east-1"}},
		},
		{
			name: "aws-iam-authenticator short flags",
			exec: &clientcmdapi.ExecConfig{Command: "aws-iam-authenticator", Args: []string{"token", "-i", "demo", "-r", "arn:aws:iam::111122223333:role/r"}},
			want: Plugin{Cloud: EKS, EKS: EKSParams{ClusterName: "demo", RoleARN: "arn:aws:iam::111122223333:role/r"}},
		},
		{
			name: "aws-iam-authenticator long flags",
			exec: &clientcmdapi.ExecConfig{Command: "aws-iam-authenticator", Args: []string{"token", "--cluster-id", "demo", "--region", "us-east-2"}},
			want: Plugin{Cloud: EKS, EKS: EKSParams{ClusterName: "demo", Region: "us-east-2"}},
		},
		{
			name:    "aws eks get-token without a cluster is refused",
			exec:    &clientcmdapi.ExecConfig{Command: "aws", Args: []string{"eks", "get-token"}},
			errText: "no cluster name",
		},
		{
			name:    "aws other subcommand is not a token plugin",
			exec:    &clientcmdapi.ExecConfig{Command: "aws", Args: []string{"sts", "get-caller-identity"}},
			wantErr: ErrNotRecognised,
		},
		{
			name:    "aws-iam-authenticator verify is not a token plugin",
			exec:    &clientcmdapi.ExecConfig{Command: "aws-iam-authenticator", Args: []string{"verify", "-t", "x", "-i", "demo"}},
			wantErr: ErrNotRecognised,
		},
		{
			name: "gke-gcloud-auth-plugin",
			exec: &clientcmdapi.ExecConfig{Command: "gke-gcloud-auth-plugin"},
			want: Plugin{Cloud: GKE},
		},
		{
			name: "gke-gcloud-auth-plugin with ADC flag",
			exec: &clientcmdapi.ExecConfig{Command: "/google-cloud-sdk/bin/gke-gcloud-auth-plugin", Args: []string{"--use_application_default_credentials"}},
			want: Plugin{Cloud: GKE},
		},
		{
			name: "kubelogin workload identity",
			exec: &clientcmdapi.ExecConfig{Command: "kubelogin", Args: []string{"get-token", "--login", "workloadidentity", "--server-id", "6dae42f8-4368-4678-94ff-3960e28e3630", "--tenant-id", "t1", "--client-id", "c1", "--environment", "AzurePublicCloud"}},
			want: Plugin{Cloud: AKS, AKS: AKSParams{ServerID: DefaultAKSServerID, Login: "workloadidentity", TenantID: "t1", ClientID: "c1", Environment: "AzurePublicCloud"}},
		},
		{
			name: "kubelogin short login flag, default server id",
			exec: &clientcmdapi.ExecConfig{Command: "kubelogin", Args: []string{"get-token", "-l", "MSI", "--client-id=c2"}},
			want: Plugin{Cloud: AKS, AKS: AKSParams{ServerID: DefaultAKSServerID, Login: "msi", ClientID: "c2"}},
		},
		{
			name: "kubelogin spn with custom server",
			exec: &clientcmdapi.ExecConfig{Command: "kubelogin", Args: []string{"get-token", "--login", "spn", "--server-id", "api://custom", "-t", "t3", "--client-id", "c3", "--client-secret", "s3cr3t"}},
			want: Plugin{Cloud: AKS, AKS: AKSParams{ServerID: "api://custom", Login: "spn", TenantID: "t3", ClientID: "c3", ClientSecret: "s3cr3t"}},
		},
		{
			name:    "kubelogin azurecli runs az: left to the exec rules",
			exec:    &clientcmdapi.ExecConfig{Command: "kubelogin", Args: []string{"get-token", "--login", "azurecli", "--server-id", DefaultAKSServerID}},
			wantErr: ErrNotInProcess,
		},
		{
			name:    "kubelogin devicecode needs a person: left to the exec rules",
			exec:    &clientcmdapi.ExecConfig{Command: "kubelogin", Args: []string{"get-token", "-l", "devicecode"}},
			wantErr: ErrNotRecognised,
		},
		{
			name: "kubelogin login from AAD_LOGIN_METHOD",
			exec: &clientcmdapi.ExecConfig{Command: "kubelogin", Args: []string{"get-token"}, Env: env("AAD_LOGIN_METHOD", "msi")},
			want: Plugin{Cloud: AKS, AKS: AKSParams{ServerID: DefaultAKSServerID, Login: "msi"}},
		},
		{
			name:    "kubelogin convert-kubeconfig is not a token plugin",
			exec:    &clientcmdapi.ExecConfig{Command: "kubelogin", Args: []string{"convert-kubeconfig", "-l", "azurecli"}},
			wantErr: ErrNotRecognised,
		},
		{
			name:    "an arbitrary exec plugin",
			exec:    &clientcmdapi.ExecConfig{Command: "vault-k8s-login", Args: []string{"--role", "ci"}},
			wantErr: ErrNotRecognised,
		},
		{
			name:    "a lookalike command is not recognised",
			exec:    &clientcmdapi.ExecConfig{Command: "/tmp/aws-eks", Args: []string{"eks", "get-token", "--cluster-name", "x"}},
			wantErr: ErrNotRecognised,
		},
		{
			name:    "nil exec",
			exec:    nil,
			wantErr: ErrNotRecognised,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Recognise(tc.exec)
			switch {
			case tc.wantErr != nil:
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("err = %v, want %v", err, tc.wantErr)
				}
				return
			case tc.errText != "":
				if err == nil || !contains(err.Error(), tc.errText) {
					t.Fatalf("err = %v, want one saying %q", err, tc.errText)
				}
				return
			case err != nil:
				t.Fatalf("Recognise: %v", err)
			}
			got.Env = nil
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func contains(s, sub string) bool {
	return strings.Contains(s, sub)
}

// TestPluginPrintsNoSecret: a Plugin logged or printed in a failing test
// does not show a client secret given on kubelogin's command line.
func TestPluginPrintsNoSecret(t *testing.T) {
	plugins := []Plugin{
		{Cloud: AKS, AKS: AKSParams{ClientID: "c", ClientSecret: "s3cr3t-value", ClientCertificatePassword: "pfx-pass"}},
		{Cloud: EKS, EKS: EKSParams{ClusterName: "demo"}, Env: map[string]string{"AWS_SECRET_ACCESS_KEY": "s3cr3t-value"}},
	}
	for _, p := range plugins {
		for _, f := range []string{"%v", "%+v", "%#v", "%s"} {
			out := fmt.Sprintf(f, p)
			if strings.Contains(out, "s3cr3t-value") || strings.Contains(out, "pfx-pass") {
				t.Errorf("%s prints a secret: %s", f, out)
			}
		}
	}
}
