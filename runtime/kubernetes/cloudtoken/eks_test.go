package cloudtoken

import (
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Test credentials in AWS's documented example format; they sign, never
// reach AWS.
const (
	testAccessKey = "AKIAIOSFODNN7EXAMPLE"
	testSecretKey = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
	testSession   = "FwoGZXIvYXdzEXAMPLESESSION"
)

// emptySHA256 is the payload hash of a GET without a body.
const emptySHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

func staticAWS(session string) AWSOptions {
	return AWSOptions{LoadOptions: []func(*config.LoadOptions) error{
		config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider(testAccessKey, testSecretKey, session)),
		// Keep the operator's ~/.aws out of the test.
		config.WithSharedConfigFiles([]string{}),
		config.WithSharedCredentialsFiles([]string{}),
	}}
}

func TestEKSToken(t *testing.T) {
	tests := []struct {
		name       string
		params     EKSParams
		session    string
		wantHost   string
		wantRegion string
	}{
		{name: "regional endpoint", params: EKSParams{ClusterName: "demo", Region: "eu-west-1"}, wantHost: "sts.eu-west-1.amazonaws.com", wantRegion: "eu-west-1"},
		{name: "session credentials", params: EKSParams{ClusterName: "prod-1", Region: "us-west-2"}, session: testSession, wantHost: "sts.us-west-2.amazonaws.com", wantRegion: "us-west-2"},
		{name: "no region falls back to us-east-1", params: EKSParams{ClusterName: "demo"}, wantHost: "sts.us-east-1.amazonaws.com", wantRegion: "us-east-1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
			src, err := NewSource(ctx, Plugin{Cloud: EKS, EKS: tc.params}, Options{
				Now:    func() time.Time { return now },
				Getenv: func(string) string { return "" },
				AWS:    staticAWS(tc.session),
			})
			if err != nil {
				t.Fatalf("NewSource: %v", err)
			}
			tok, err := src.Token(ctx)
			if err != nil {
				t.Fatalf("Token: %v", err)
			}
			if want := now.Add(14 * time.Minute); !tok.Expiry.Equal(want) {
				t.Errorf("expiry = %s, want %s", tok.Expiry, want)
			}
			u := decodeEKSToken(t, tok.Value)
			if u.Scheme != "https" || u.Host != tc.wantHost || u.Path != "/" {
				t.Errorf("URL = %s://%s%s, want https://%s/", u.Scheme, u.Host, u.Path, tc.wantHost)
			}
			q := u.Query()
			for k, want := range map[string]string{
				"Action":          "GetCallerIdentity",
				"Version":         "2011-06-15",
				"X-Amz-Expires":   "60",
				"X-Amz-Algorithm": "AWS4-HMAC-SHA256",
			} {
				if got := q.Get(k); got != want {
					t.Errorf("%s = %q, want %q", k, got, want)
				}
			}
			if got := q.Get("X-Amz-Security-Token"); got != tc.session {
				t.Errorf("X-Amz-Security-Token = %q, want %q", got, tc.session)
			}
			signed := strings.Split(q.Get("X-Amz-SignedHeaders"), ";")
			if !containsString(signed, "x-k8s-aws-id") || !containsString(signed, "host") {
				t.Errorf("signed headers %v lack host or x-k8s-aws-id", signed)
			}
			if cred := q.Get("X-Amz-Credential"); !strings.HasPrefix(cred, testAccessKey+"/") || !strings.HasSuffix(cred, "/"+tc.wantRegion+"/sts/aws4_request") {
				t.Errorf("X-Amz-Credential = %q", cred)
			}

			// Recompute the signature the way STS will check it: from the
			// query without the signature, the host and the cluster header.
			if got, want := q.Get("X-Amz-Signature"), resign(t, u, tc.params.ClusterName, tc.wantRegion, tc.session); got != want {
				t.Errorf("signature %s does not verify (recomputed %s)", got, want)
			}
			// And the cluster header is bound: another cluster's name
			// gives another signature.
			if q.Get("X-Amz-Signature") == resign(t, u, tc.params.ClusterName+"-other", tc.wantRegion, tc.session) {
				t.Error("signature does not depend on x-k8s-aws-id")
			}
		})
	}
}

func decodeEKSToken(t *testing.T, tok string) *url.URL {
	t.Helper()
	rest, ok := strings.CutPrefix(tok, "k8s-aws-v1.")
	if !ok {
		t.Fatalf("token lacks the k8s-aws-v1. prefix")
	}
	if strings.ContainsAny(rest, "=+/") {
		t.Fatalf("token is not base64url without padding")
	}
	raw, err := base64.RawURLEncoding.DecodeString(rest)
	if err != nil {
		t.Fatalf("decoding token: %v", err)
	}
	u, err := url.Parse(string(raw))
	if err != nil {
		t.Fatalf("parsing presigned URL: %v", err)
	}
	return u
}

// resign presigns the same request again with the v4 signer and returns
// the signature.
func resign(t *testing.T, signedURL *url.URL, cluster, region, session string) string {
	t.Helper()
	q := signedURL.Query()
	when, err := time.Parse("20060102T150405Z", q.Get("X-Amz-Date"))
	if err != nil {
		t.Fatalf("parsing X-Amz-Date: %v", err)
	}
	for _, k := range []string{"X-Amz-Signature", "X-Amz-Algorithm", "X-Amz-Credential", "X-Amz-Date", "X-Amz-SignedHeaders", "X-Amz-Security-Token"} {
		q.Del(k)
	}
	u := *signedURL
	u.RawQuery = q.Encode()
	req, err := http.NewRequest(http.MethodGet, u.String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("x-k8s-aws-id", cluster)
	creds := aws.Credentials{AccessKeyID: testAccessKey, SecretAccessKey: testSecretKey, SessionToken: session}
	out, _, err := v4.NewSigner().PresignHTTP(context.Background(), creds, req, emptySHA256, "sts", region, when)
	if err != nil {
		t.Fatalf("presigning: %v", err)
	}
	ou, err := url.Parse(out)
	if err != nil {
		t.Fatal(err)
	}
	return ou.Query().Get("X-Amz-Signature")
}

func containsString(ss []string, s string) bool {
	for _, v := range ss {
		if v == s {
			return true
		}
	}
	return false
}

func TestEKSErrorNamesCloudAndIdentity(t *testing.T) {
	ctx := context.Background()
	failing := aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
		return aws.Credentials{}, errors.New("no web identity token file")
	})
	p := Plugin{Cloud: EKS, EKS: EKSParams{ClusterName: "demo", Region: "eu-west-1", Profile: "ops"}}
	src, err := NewSource(ctx, p, Options{AWS: AWSOptions{LoadOptions: []func(*config.LoadOptions) error{
		config.WithCredentialsProvider(failing),
		config.WithSharedConfigFiles([]string{}),
		config.WithSharedCredentialsFiles([]string{}),
		// The profile names the identity in the error; it need not exist
		// since credentials are given.
		config.WithSharedConfigProfile(""),
	}}})
	if err != nil {
		t.Fatalf("NewSource: %v", err)
	}
	_, err = src.Token(ctx)
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("err = %v, want *Error", err)
	}
	for _, want := range []string{"eks token", "cluster demo", "AWS profile ops", "getting AWS credentials", "no web identity token file"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}

// TestEKSTokenExpiryFollowsCredentials: a token signed with session
// credentials that expire sooner than 14 minutes expires with them.
func TestEKSTokenExpiryFollowsCredentials(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	soon := now.Add(5 * time.Minute)
	provider := aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
		return aws.Credentials{AccessKeyID: testAccessKey, SecretAccessKey: testSecretKey, SessionToken: testSession, CanExpire: true, Expires: soon}, nil
	})
	src, err := NewSource(ctx, Plugin{Cloud: EKS, EKS: EKSParams{ClusterName: "demo", Region: "eu-west-1"}}, Options{
		Now: func() time.Time { return now },
		AWS: AWSOptions{LoadOptions: []func(*config.LoadOptions) error{
			config.WithCredentialsProvider(provider),
			config.WithSharedConfigFiles([]string{}),
			config.WithSharedCredentialsFiles([]string{}),
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	tok, err := src.Token(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !tok.Expiry.Equal(soon) {
		t.Errorf("expiry %s, want the credentials' %s", tok.Expiry, soon)
	}
}

// TestEKSRefusesCredentialProcess: a profile whose credentials come from
// credential_process would have the SDK run a command.
func TestEKSRefusesCredentialProcess(t *testing.T) {
	// The process environment must not offer credentials ahead of the
	// profile.
	for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN", "AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"} {
		t.Setenv(k, "")
	}
	dir := t.TempDir()
	cfgFile := filepath.Join(dir, "config")
	marker := filepath.Join(dir, "ran")
	if err := os.WriteFile(cfgFile, []byte("[profile ops]\nregion = eu-west-1\ncredential_process = /bin/sh -c 'touch "+marker+"'\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	p := Plugin{Cloud: EKS, EKS: EKSParams{ClusterName: "demo", Profile: "ops"}}
	_, err := NewSource(ctx, p, Options{AWS: AWSOptions{LoadOptions: []func(*config.LoadOptions) error{
		config.WithSharedConfigFiles([]string{cfgFile}),
		config.WithSharedCredentialsFiles([]string{}),
	}}})
	if err == nil || !strings.Contains(err.Error(), "credential_process would run a command") || !strings.Contains(err.Error(), "AWS profile ops") {
		t.Fatalf("err = %v, want the credential_process refusal naming the profile", err)
	}
	if _, serr := os.Stat(marker); serr == nil {
		t.Error("the credential_process ran")
	}
}

// TestEKSCredentialsFromExecEnv: keys in the exec entry's env sign the
// token, as the plugin would have used them.
func TestEKSCredentialsFromExecEnv(t *testing.T) {
	ctx := context.Background()
	p, err := Recognise(&clientcmdapi.ExecConfig{Command: "aws", Args: []string{"eks", "get-token", "--cluster-name", "demo", "--region", "eu-west-1"},
		Env: []clientcmdapi.ExecEnvVar{{Name: "AWS_ACCESS_KEY_ID", Value: "AKIAEXECENVEXAMPLE"}, {Name: "AWS_SECRET_ACCESS_KEY", Value: testSecretKey}}})
	if err != nil {
		t.Fatal(err)
	}
	src, err := NewSource(ctx, p, Options{AWS: AWSOptions{LoadOptions: []func(*config.LoadOptions) error{
		config.WithSharedConfigFiles([]string{}), config.WithSharedCredentialsFiles([]string{}),
	}}})
	if err != nil {
		t.Fatal(err)
	}
	tok, err := src.Token(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if cred := decodeEKSToken(t, tok.Value).Query().Get("X-Amz-Credential"); !strings.HasPrefix(cred, "AKIAEXECENVEXAMPLE/") {
		t.Errorf("signed with %q, want the exec env's key", cred)
	}
}

// TestEKSRefusesCredentialProcessUnderRole: the check sees the chain the
// role is assumed with.
func TestEKSRefusesCredentialProcessUnderRole(t *testing.T) {
	for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN", "AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"} {
		t.Setenv(k, "")
	}
	cfgFile := filepath.Join(t.TempDir(), "config")
	if err := os.WriteFile(cfgFile, []byte("[profile ops]\nregion = eu-west-1\ncredential_process = /bin/false\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := Plugin{Cloud: EKS, EKS: EKSParams{ClusterName: "demo", Profile: "ops", RoleARN: "arn:aws:iam::111122223333:role/deployer"}}
	_, err := NewSource(context.Background(), p, Options{AWS: AWSOptions{LoadOptions: []func(*config.LoadOptions) error{
		config.WithSharedConfigFiles([]string{cfgFile}), config.WithSharedCredentialsFiles([]string{}),
	}}})
	if err == nil || !strings.Contains(err.Error(), "credential_process") || !strings.Contains(err.Error(), "role arn:aws:iam::111122223333:role/deployer") {
		t.Fatalf("err = %v, want the credential_process refusal naming the role", err)
	}
}
