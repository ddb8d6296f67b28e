package cloudtoken

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/credentials/stscreds"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"github.com/aws/smithy-go/logging"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

const (
	// eksTokenPrefix marks a token as a presigned STS URL for the EKS
	// authenticator.
	eksTokenPrefix = "k8s-aws-v1."
	// eksClusterHeader binds the presigned URL to one cluster, so a token
	// for one cluster is refused by another.
	eksClusterHeader = "x-k8s-aws-id"
	// eksPresignExpires is what aws-iam-authenticator signs with; the
	// server accepts the URL for 15 minutes from X-Amz-Date regardless.
	eksPresignExpires = "60"
	// eksTokenLifetime is how long the token is reported valid: 15
	// minutes minus a minute for clock skew, as aws-iam-authenticator
	// reports it.
	eksTokenLifetime = 14 * time.Minute
	// eksSessionName names the assumed-role session in CloudTrail.
	eksSessionName = "kusionpr"
	// eksRoleRenewal renews an assumed role's credentials this long before
	// they expire, so a token presigned with them is not cut short.
	eksRoleRenewal = 5 * time.Minute
)

// AWSOptions adjusts the AWS configuration loaded from the default chain.
type AWSOptions struct {
	// LoadOptions are appended after the plugin's region and profile.
	LoadOptions []func(*config.LoadOptions) error
}

type eksSource struct {
	params   EKSParams
	identity string
	// chainOnly: nothing named credentials (no keys, role, profile or
	// web identity in the environment or the exec entry), so a failure
	// is the environment's lack of them.
	chainOnly bool
	presign   *sts.PresignClient
	creds     aws.CredentialsProvider
	now       func() time.Time
}

func newEKSSource(ctx context.Context, p Plugin, opts Options) (*eksSource, error) {
	identity := eksIdentity(p)
	// The SDK's own logger writes unstructured lines to stderr (IMDS
	// fallbacks); what failed reaches the caller in the error instead.
	load := []func(*config.LoadOptions) error{config.WithLogger(logging.Nop{})}
	if p.EKS.Region != "" {
		load = append(load, config.WithRegion(p.EKS.Region))
	}
	if p.EKS.Profile != "" {
		load = append(load, config.WithSharedConfigProfile(p.EKS.Profile))
	}
	// Keys in the exec entry's env are what the plugin would have used;
	// they come before the process's own.
	if id, secret := p.Env["AWS_ACCESS_KEY_ID"], p.Env["AWS_SECRET_ACCESS_KEY"]; id != "" && secret != "" {
		load = append(load, config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider(id, secret, p.Env["AWS_SESSION_TOKEN"])))
	}
	load = append(load, opts.AWS.LoadOptions...)
	cfg, err := config.LoadDefaultConfig(ctx, load...)
	if err != nil {
		return nil, &Error{Cloud: EKS, Identity: identity, Doing: "loading the AWS configuration", Err: err}
	}
	if cfg.Region == "" {
		// STS needs a region to sign for; the CLI falls back the same way.
		cfg.Region = "us-east-1"
	}
	// Checked before a role wraps the chain, which hides its source.
	if runsProcess(cfg.Credentials) {
		return nil, &Error{Cloud: EKS, Identity: identity, Doing: "choosing AWS credentials",
			Err: errors.New("the AWS profile's credential_process would run a command; give the runner credentials from the environment, web identity (IRSA), SSO or instance metadata")}
	}
	if p.EKS.RoleARN != "" {
		// The role is assumed with the default chain's credentials, then
		// cached until shortly before the session expires.
		base := sts.NewFromConfig(cfg)
		cfg.Credentials = aws.NewCredentialsCache(stscreds.NewAssumeRoleProvider(base, p.EKS.RoleARN, func(o *stscreds.AssumeRoleOptions) {
			o.RoleSessionName = eksSessionName
		}), func(o *aws.CredentialsCacheOptions) { o.ExpiryWindow = eksRoleRenewal })
	}
	// getenv looks in the entry's env first.
	chainOnly := p.EKS.RoleARN == "" && p.EKS.Profile == ""
	for _, n := range []string{"AWS_ACCESS_KEY_ID", "AWS_ROLE_ARN", "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_PROFILE", "AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"} {
		chainOnly = chainOnly && p.getenv(opts, n) == ""
	}
	return &eksSource{
		params:    p.EKS,
		identity:  identity,
		chainOnly: chainOnly,
		presign:   sts.NewPresignClient(sts.NewFromConfig(cfg)),
		creds:     cfg.Credentials,
		now:       opts.now,
	}, nil
}

// runsProcess says whether the credential chain resolved to a profile's
// credential_process, which the SDK would run as a command.
func runsProcess(p aws.CredentialsProvider) bool {
	src, ok := p.(aws.CredentialProviderSource)
	if !ok {
		return false
	}
	for _, s := range src.ProviderSources() {
		if s == aws.CredentialSourceProcess {
			return true
		}
	}
	return false
}

func eksIdentity(p Plugin) string {
	switch {
	case p.EKS.RoleARN != "":
		return fmt.Sprintf("cluster %s, role %s", p.EKS.ClusterName, p.EKS.RoleARN)
	case p.Env["AWS_ACCESS_KEY_ID"] != "":
		return fmt.Sprintf("cluster %s, the access keys in the exec entry's env", p.EKS.ClusterName)
	case p.EKS.Profile != "":
		return fmt.Sprintf("cluster %s, AWS profile %s", p.EKS.ClusterName, p.EKS.Profile)
	default:
		return fmt.Sprintf("cluster %s, the default AWS credential chain", p.EKS.ClusterName)
	}
}

func (s *eksSource) describe() string { return fmt.Sprintf("%s token for %s", EKS, s.identity) }

// Token presigns sts:GetCallerIdentity with the cluster header, as
// aws-iam-authenticator and aws eks get-token do; the EKS authenticator
// calls the URL and maps the returned ARN to a Kubernetes identity.
func (s *eksSource) Token(ctx context.Context) (Token, error) {
	now := s.now()
	expiry := now.Add(eksTokenLifetime)
	if s.creds == nil {
		return Token{}, &Error{Cloud: EKS, Identity: s.identity, Doing: "getting AWS credentials", Err: errors.New("no credentials found in the default chain")}
	}
	// The presigned URL is refused once the credentials that signed it
	// expire (a session's, an assumed role's), whatever X-Amz-Date says.
	creds, err := s.creds.Retrieve(ctx)
	if err != nil {
		if s.chainOnly {
			err = fmt.Errorf("no AWS credentials in the environment (AWS_ACCESS_KEY_ID, which aws-actions/configure-aws-credentials sets; AWS_ROLE_ARN and AWS_WEB_IDENTITY_TOKEN_FILE, which IRSA sets; AWS_PROFILE) and none from the instance's metadata: %w", err)
		}
		return Token{}, &Error{Cloud: EKS, Identity: s.identity, Doing: "getting AWS credentials", Err: err}
	}
	if creds.CanExpire && creds.Expires.Before(expiry) {
		expiry = creds.Expires
	}
	req, err := s.presign.PresignGetCallerIdentity(ctx, &sts.GetCallerIdentityInput{}, func(po *sts.PresignOptions) {
		po.ClientOptions = append(po.ClientOptions, func(o *sts.Options) {
			o.APIOptions = append(o.APIOptions,
				smithyhttp.SetHeaderValue(eksClusterHeader, s.params.ClusterName),
				// The presigner hoists X-Amz-* headers into the query.
				smithyhttp.SetHeaderValue("X-Amz-Expires", eksPresignExpires),
			)
		})
	})
	if err != nil {
		return Token{}, &Error{Cloud: EKS, Identity: s.identity, Doing: "presigning sts:GetCallerIdentity", Err: err}
	}
	if req.URL == "" {
		return Token{}, &Error{Cloud: EKS, Identity: s.identity, Doing: "presigning sts:GetCallerIdentity", Err: errors.New("empty presigned URL")}
	}
	return Token{
		Value:  eksTokenPrefix + base64.RawURLEncoding.EncodeToString([]byte(req.URL)),
		Expiry: expiry,
	}, nil
}
