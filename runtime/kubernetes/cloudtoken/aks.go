package cloudtoken

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/cloud"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
)

// AzureOptions adjusts the azidentity credentials.
type AzureOptions struct {
	ClientOptions azcore.ClientOptions
	// DisableInstanceDiscovery skips Entra ID's instance discovery, for
	// private clouds and local test authorities.
	DisableInstanceDiscovery bool
}

type aksSource struct {
	identity string
	scope    string
	cred     azcore.TokenCredential
}

func newAKSSource(ctx context.Context, p Plugin, opts Options) (*aksSource, error) {
	a := p.AKS
	env := func(names ...string) string {
		for _, n := range names {
			if v := p.getenv(opts, n); v != "" {
				return v
			}
		}
		return ""
	}
	login := a.Login
	if login == "" {
		login = "default"
	}
	clientID := a.ClientID
	tenantID := a.TenantID
	if tenantID == "" {
		tenantID = env("AZURE_TENANT_ID", "AAD_SERVICE_PRINCIPAL_TENANT_ID")
	}
	co := opts.Azure.ClientOptions
	if co.Cloud.ActiveDirectoryAuthorityHost == "" {
		c, err := azureCloud(cmp.Or(a.Environment, env("AZURE_ENVIRONMENT")))
		if err != nil {
			return nil, &Error{Cloud: AKS, Identity: fmt.Sprintf("server app %s, login %s", a.ServerID, login), Doing: "choosing the Azure cloud", Err: err}
		}
		co.Cloud = c
	}
	if host := cmp.Or(a.AuthorityHost, env("AZURE_AUTHORITY_HOST")); host != "" {
		co.Cloud.ActiveDirectoryAuthorityHost = host
	}
	// Instance discovery asks login.microsoftonline.com whether the
	// authority is Entra ID's; an authority the operator names that is
	// none of Entra ID's clouds (Azure Stack, a disconnected cloud) is
	// trusted as named, as azidentity's option says to do for those.
	noDiscovery := opts.Azure.DisableInstanceDiscovery || !entraHost(co.Cloud.ActiveDirectoryAuthorityHost)
	identity := func(id string) string {
		s := fmt.Sprintf("server app %s, login %s", a.ServerID, login)
		if id != "" {
			s += ", client id " + id
		}
		if tenantID != "" {
			s += ", tenant " + tenantID
		}
		return s
	}
	fail := func(id, doing string, err error) error {
		return &Error{Cloud: AKS, Identity: identity(id), Doing: doing, Err: err}
	}

	var (
		cred azcore.TokenCredential
		err  error
	)
	switch login {
	case "workloadidentity":
		clientID = cmp.Or(clientID, env("AZURE_CLIENT_ID"))
		tokenFile := cmp.Or(a.FederatedTokenFile, env("AZURE_FEDERATED_TOKEN_FILE"))
		gh := githubOIDCFrom(env, opts.HTTPClient)
		switch {
		case tokenFile == "" && gh != nil:
			// In a GitHub Actions job the federated token is the job's.
			cred, err = gitHubAssertion(co, tenantID, clientID, gh, noDiscovery)
		case tokenFile == "":
			err = errors.New("no federated token: neither AZURE_FEDERATED_TOKEN_FILE (set by Azure Workload Identity in a pod) nor ACTIONS_ID_TOKEN_REQUEST_URL (a GitHub Actions job with `permissions: id-token: write`) is set")
		}
		if err != nil || cred != nil {
			break
		}
		cred, err = azidentity.NewWorkloadIdentityCredential(&azidentity.WorkloadIdentityCredentialOptions{
			ClientOptions:            co,
			ClientID:                 clientID,
			TenantID:                 tenantID,
			TokenFilePath:            tokenFile,
			DisableInstanceDiscovery: noDiscovery,
		})
	case "msi":
		o := &azidentity.ManagedIdentityCredentialOptions{ClientOptions: co}
		if clientID != "" {
			o.ID = azidentity.ClientID(clientID)
		}
		cred, err = azidentity.NewManagedIdentityCredential(o)
	case "spn":
		clientID = cmp.Or(clientID, env("AAD_SERVICE_PRINCIPAL_CLIENT_ID", "AZURE_CLIENT_ID"))
		secret := cmp.Or(a.ClientSecret, env("AAD_SERVICE_PRINCIPAL_CLIENT_SECRET", "AZURE_CLIENT_SECRET"))
		certFile := cmp.Or(a.ClientCertificate, env("AAD_SERVICE_PRINCIPAL_CLIENT_CERTIFICATE", "AZURE_CLIENT_CERTIFICATE_PATH"))
		switch {
		case secret != "":
			cred, err = azidentity.NewClientSecretCredential(tenantID, clientID, secret, &azidentity.ClientSecretCredentialOptions{
				ClientOptions:            co,
				DisableInstanceDiscovery: noDiscovery,
			})
		case certFile != "":
			data, rerr := os.ReadFile(certFile)
			if rerr != nil {
				return nil, fail(clientID, "reading the client certificate", rerr)
			}
			certs, key, perr := azidentity.ParseCertificates(data, []byte(cmp.Or(a.ClientCertificatePassword, env("AAD_SERVICE_PRINCIPAL_CLIENT_CERTIFICATE_PASSWORD", "AZURE_CLIENT_CERTIFICATE_PASSWORD"))))
			if perr != nil {
				return nil, fail(clientID, "parsing the client certificate", perr)
			}
			cred, err = azidentity.NewClientCertificateCredential(tenantID, clientID, certs, key, &azidentity.ClientCertificateCredentialOptions{
				ClientOptions:            co,
				DisableInstanceDiscovery: noDiscovery,
			})
		default:
			return nil, fail(clientID, "building the service principal credential", errors.New("neither a client secret nor a client certificate is set (--client-secret, AAD_SERVICE_PRINCIPAL_CLIENT_SECRET, AZURE_CLIENT_SECRET or a certificate)"))
		}
	case "default":
		// kubelogin's own default is devicecode, which needs a person;
		// on a runner the useful default is DefaultAzureCredential's
		// chain without its members that run az, azd or pwsh.
		clientID = cmp.Or(clientID, env("AZURE_CLIENT_ID"))
		cred, err = defaultChain(co, clientID, tenantID, env("AZURE_FEDERATED_TOKEN_FILE"), githubOIDCFrom(env, opts.HTTPClient), noDiscovery)
	default:
		if _, runs := kubeloginNotInProcess[login]; runs {
			// Recognise refuses these already; a Plugin built by hand may not.
			return nil, fail(clientID, "choosing a credential", fmt.Errorf("login %s: %w", login, ErrNotInProcess))
		}
		return nil, fail(clientID, "choosing a credential", fmt.Errorf("unknown login %q", login))
	}
	if err != nil {
		return nil, fail(clientID, "building the "+login+" credential", err)
	}
	return &aksSource{identity: identity(clientID), scope: strings.TrimSuffix(a.ServerID, "/") + "/.default", cred: cred}, nil
}

// defaultChain tries the credentials that need no command, in
// DefaultAzureCredential's order; members that cannot be built in this
// environment are left out, as DefaultAzureCredential does.
func defaultChain(co azcore.ClientOptions, clientID, tenantID, tokenFile string, gh *githubOIDC, noDiscovery bool) (azcore.TokenCredential, error) {
	var (
		creds []azcore.TokenCredential
		errs  []error
	)
	if tokenFile == "" && gh != nil {
		// A GitHub Actions job's own token comes first: azure/login's
		// OIDC login leaves nothing else an SDK reads.
		if c, err := gitHubAssertion(co, tenantID, clientID, gh, noDiscovery); err == nil {
			creds = append(creds, c)
		} else {
			errs = append(errs, fmt.Errorf("GitHub Actions OIDC: %w", err))
		}
	}
	if c, err := azidentity.NewEnvironmentCredential(&azidentity.EnvironmentCredentialOptions{ClientOptions: co, DisableInstanceDiscovery: noDiscovery}); err == nil {
		creds = append(creds, c)
	} else {
		errs = append(errs, fmt.Errorf("environment: %w", err))
	}
	if c, err := azidentity.NewWorkloadIdentityCredential(&azidentity.WorkloadIdentityCredentialOptions{
		ClientOptions: co, ClientID: clientID, TenantID: tenantID, TokenFilePath: tokenFile, DisableInstanceDiscovery: noDiscovery,
	}); err == nil {
		creds = append(creds, c)
	} else {
		errs = append(errs, fmt.Errorf("workload identity: %w", err))
	}
	mo := &azidentity.ManagedIdentityCredentialOptions{ClientOptions: co}
	if clientID != "" {
		mo.ID = azidentity.ClientID(clientID)
	}
	if c, err := azidentity.NewManagedIdentityCredential(mo); err == nil {
		creds = append(creds, c)
	} else {
		errs = append(errs, fmt.Errorf("managed identity: %w", err))
	}
	if len(creds) == 0 {
		return nil, errors.Join(errs...)
	}
	return azidentity.NewChainedTokenCredential(creds, nil)
}

// gitHubAssertion exchanges the job's GitHub OIDC token for the client's
// Entra ID token, through the federated credential the client trusts.
func gitHubAssertion(co azcore.ClientOptions, tenantID, clientID string, gh *githubOIDC, noDiscovery bool) (azcore.TokenCredential, error) {
	if tenantID == "" || clientID == "" {
		return nil, errors.New("a GitHub Actions OIDC login needs AZURE_CLIENT_ID and AZURE_TENANT_ID (or --client-id and --tenant-id)")
	}
	return azidentity.NewClientAssertionCredential(tenantID, clientID, func(ctx context.Context) (string, error) {
		return gh.Token(ctx, azureExchangeAudience)
	}, &azidentity.ClientAssertionCredentialOptions{ClientOptions: co, DisableInstanceDiscovery: noDiscovery})
}

// entraHost says whether host (an authority URL) is one of Entra ID's
// public or sovereign clouds, which instance discovery knows.
func entraHost(authority string) bool {
	u, err := url.Parse(authority)
	if err != nil {
		return false
	}
	switch strings.ToLower(u.Hostname()) {
	case "login.microsoftonline.com", "login.microsoft.com", "login.windows.net", "sts.windows.net",
		"login.chinacloudapi.cn", "login.microsoftonline.us", "login.microsoftonline.de":
		return true
	}
	return false
}

func (s *aksSource) describe() string { return fmt.Sprintf("%s token for %s", AKS, s.identity) }

// Token returns an Entra ID access token for the AKS server app, which
// the AKS API server accepts as kubelogin's.
func (s *aksSource) Token(ctx context.Context) (Token, error) {
	t, err := s.cred.GetToken(ctx, policy.TokenRequestOptions{Scopes: []string{s.scope}})
	if err != nil {
		return Token{}, &Error{Cloud: AKS, Identity: s.identity, Doing: "getting an Entra ID token for " + s.scope, Err: err}
	}
	return Token{Value: t.Token, Expiry: t.ExpiresOn}, nil
}

// azureCloud maps kubelogin's --environment to the cloud whose Entra ID
// issues the token; the sovereign clouds have their own authority hosts.
func azureCloud(name string) (cloud.Configuration, error) {
	switch strings.ToLower(name) {
	case "", "azurepubliccloud", "azurecloud":
		return cloud.AzurePublic, nil
	case "azurechinacloud":
		return cloud.AzureChina, nil
	case "azureusgovernmentcloud", "azureusgovernment":
		return cloud.AzureGovernment, nil
	default:
		return cloud.Configuration{}, fmt.Errorf("unknown environment %q: want AzurePublicCloud, AzureChinaCloud or AzureUSGovernmentCloud, or give --authority-host", name)
	}
}
