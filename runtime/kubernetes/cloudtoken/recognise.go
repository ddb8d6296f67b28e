// Package cloudtoken computes the bearer tokens of the managed clusters'
// well-known kubeconfig exec plugins (aws eks get-token,
// aws-iam-authenticator, gke-gcloud-auth-plugin, kubelogin) in process
// with the clouds' Go SDKs. The distroless image carries none of those
// binaries, and computing the token in process means no command runs on
// the runner for them.
package cloudtoken

import (
	"cmp"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Cloud names the cloud whose plugin an exec entry is.
type Cloud string

// The clouds recognised.
const (
	EKS Cloud = "eks"
	GKE Cloud = "gke"
	AKS Cloud = "aks"
)

// ErrNotRecognised says an exec entry is none of the well-known plugins;
// the caller treats it as an ordinary exec plugin (run only where allowed).
var ErrNotRecognised = errors.New("exec entry is not a recognised cloud plugin")

// ErrNotInProcess is returned, wrapped, for a recognised plugin whose
// token cannot be computed in process: its mode runs a command (kubelogin
// --login azurecli runs az) or needs a person (devicecode). It wraps
// ErrNotRecognised, so a caller leaves such an entry to the exec rules,
// as before this package: an operator whose runner has az keeps working.
var ErrNotInProcess = fmt.Errorf("%w: its token cannot be computed in process", ErrNotRecognised)

// kubeloginNotInProcess are kubelogin's login modes that run a command or
// need a person, and why.
var kubeloginNotInProcess = map[string]string{
	"azurecli":        "it runs az",
	"azd":             "it runs azd",
	"azurepowershell": "it runs pwsh",
	"devicecode":      "it needs a person (kubelogin's default login)",
	"interactive":     "it needs a person",
	"ropc":            "it needs a user's password",
}

// DefaultAKSServerID is the application id of the AKS AAD server, which
// kubelogin uses when --server-id is not given.
const DefaultAKSServerID = "6dae42f8-4368-4678-94ff-3960e28e3630"

// Plugin is a recognised exec entry and the parameters its token needs.
type Plugin struct {
	Cloud Cloud
	EKS   EKSParams
	AKS   AKSParams
	// Env is the exec entry's env, which the plugin would have seen; it
	// is consulted before the process environment.
	Env map[string]string
}

// EKSParams are the parameters of aws eks get-token / aws-iam-authenticator.
type EKSParams struct {
	ClusterName string
	Region      string
	RoleARN     string
	Profile     string
}

// AKSParams are the parameters of kubelogin get-token.
type AKSParams struct {
	ServerID      string
	Login         string
	TenantID      string
	ClientID      string
	AuthorityHost string
	// Environment is kubelogin's --environment (AzurePublicCloud,
	// AzureChinaCloud, AzureUSGovernmentCloud).
	Environment        string
	FederatedTokenFile string
	// ClientSecret may come from the command line (--client-secret); it is
	// never put in an error.
	ClientSecret string
	// ClientCertificate is a PEM or PKCS#12 file for login spn.
	ClientCertificate         string
	ClientCertificatePassword string
}

// String keeps the exec env's values (AWS_SECRET_ACCESS_KEY, ...) and
// kubelogin's secrets out of logs: only the env's names are shown.
func (p Plugin) String() string {
	names := make([]string, 0, len(p.Env))
	for k := range p.Env {
		names = append(names, k)
	}
	slices.Sort(names)
	switch p.Cloud {
	case EKS:
		return fmt.Sprintf("%s %+v env %v", p.Cloud, p.EKS, names)
	case AKS:
		return fmt.Sprintf("%s %v env %v", p.Cloud, p.AKS, names)
	default:
		return fmt.Sprintf("%s env %v", p.Cloud, names)
	}
}

// GoString does the same for %#v.
func (p Plugin) GoString() string { return p.String() }

// String keeps secrets given on kubelogin's command line out of logs.
func (a AKSParams) String() string {
	r := a
	if r.ClientSecret != "" {
		r.ClientSecret = "redacted"
	}
	if r.ClientCertificatePassword != "" {
		r.ClientCertificatePassword = "redacted"
	}
	type plain AKSParams // no String method, so no recursion
	return fmt.Sprintf("%+v", plain(r))
}

// GoString does the same for %#v.
func (a AKSParams) GoString() string { return a.String() }

// Recognise says which cloud plugin exec is and its parameters, or
// returns ErrNotRecognised.
func Recognise(exec *clientcmdapi.ExecConfig) (Plugin, error) {
	if exec == nil {
		return Plugin{}, ErrNotRecognised
	}
	env := map[string]string{}
	for _, e := range exec.Env {
		env[e.Name] = e.Value
	}
	p := Plugin{Env: env}
	// The command may be a path (/usr/local/bin/aws) or, on Windows
	// kubeconfigs, carry .exe; only its base name identifies the plugin.
	cmd := strings.TrimSuffix(path.Base(strings.ReplaceAll(exec.Command, `\`, "/")), ".exe")
	flags, positional := parseArgs(exec.Args)
	switch cmd {
	case "aws":
		// Global options (--region, --profile) may come before the
		// subcommand, so look for "eks get-token" among the positionals.
		if !hasSequence(positional, "eks", "get-token") {
			return Plugin{}, ErrNotRecognised
		}
		p.Cloud = EKS
		p.EKS = EKSParams{
			ClusterName: first(flags, "cluster-name", "cluster-id"),
			Region:      first(flags, "region"),
			RoleARN:     first(flags, "role-arn"),
			Profile:     first(flags, "profile"),
		}
	case "aws-iam-authenticator":
		if !hasSequence(positional, "token") {
			return Plugin{}, ErrNotRecognised
		}
		p.Cloud = EKS
		p.EKS = EKSParams{
			ClusterName: first(flags, "cluster-id", "i"),
			Region:      first(flags, "region"),
			RoleARN:     first(flags, "role", "r", "role-arn"),
		}
	case "gke-gcloud-auth-plugin":
		p.Cloud = GKE
	case "kubelogin":
		if !hasSequence(positional, "get-token") {
			return Plugin{}, ErrNotRecognised
		}
		p.Cloud = AKS
		p.AKS = AKSParams{
			ServerID: first(flags, "server-id"),
			// kubelogin reads AAD_LOGIN_METHOD when --login is not given.
			Login:                     strings.ToLower(cmp.Or(first(flags, "login", "l"), env["AAD_LOGIN_METHOD"])),
			TenantID:                  first(flags, "tenant-id", "t"),
			ClientID:                  first(flags, "client-id"),
			AuthorityHost:             first(flags, "authority-host"),
			Environment:               first(flags, "environment", "e"),
			FederatedTokenFile:        first(flags, "federated-token-file"),
			ClientSecret:              first(flags, "client-secret"),
			ClientCertificate:         first(flags, "client-certificate"),
			ClientCertificatePassword: first(flags, "client-certificate-password"),
		}
		if p.AKS.ServerID == "" {
			p.AKS.ServerID = DefaultAKSServerID
		}
		if why, ok := kubeloginNotInProcess[p.AKS.Login]; ok {
			return Plugin{}, fmt.Errorf("kubelogin --login %s: %w: %s", p.AKS.Login, ErrNotInProcess, why)
		}
	default:
		return Plugin{}, ErrNotRecognised
	}
	if p.Cloud == EKS {
		if p.EKS.Region == "" {
			p.EKS.Region = firstEnv(env, "AWS_REGION", "AWS_DEFAULT_REGION")
		}
		if p.EKS.Profile == "" {
			p.EKS.Profile = env["AWS_PROFILE"]
		}
		if p.EKS.ClusterName == "" {
			return Plugin{}, fmt.Errorf("recognising %s exec plugin %q: no cluster name (--cluster-name or -i)", EKS, cmd)
		}
	}
	return p, nil
}

// booleanFlags take no value; without this list "--use_application_default_credentials
// get-token" style lines would swallow the next word as a value.
var booleanFlags = map[string]bool{
	"use_application_default_credentials": true,
	"legacy":                              true,
	"debug":                               true,
	"no-verify-ssl":                       true,
	"no-paginate":                         true,
	"forward-session-name":                true,
}

// parseArgs splits args into flag values (--name value, --name=value,
// -n value) and positionals. It is deliberately loose: it only has to
// find the few flags the tokens need.
func parseArgs(args []string) (map[string][]string, []string) {
	flags := map[string][]string{}
	var positional []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			positional = append(positional, args[i+1:]...)
			break
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			positional = append(positional, a)
			continue
		}
		name := strings.TrimLeft(a, "-")
		if k, v, ok := strings.Cut(name, "="); ok {
			flags[k] = append(flags[k], v)
			continue
		}
		if booleanFlags[name] || i+1 >= len(args) || strings.HasPrefix(args[i+1], "-") {
			flags[name] = append(flags[name], "")
			continue
		}
		flags[name] = append(flags[name], args[i+1])
		i++
	}
	return flags, positional
}

// first returns the last value of the first of names given, as the CLIs
// let a later flag override an earlier one.
func first(flags map[string][]string, names ...string) string {
	for _, n := range names {
		if v := flags[n]; len(v) > 0 {
			return v[len(v)-1]
		}
	}
	return ""
}

func firstEnv(env map[string]string, names ...string) string {
	for _, n := range names {
		if v := env[n]; v != "" {
			return v
		}
	}
	return ""
}

func hasSequence(words []string, seq ...string) bool {
	for i := 0; i+len(seq) <= len(words); i++ {
		match := true
		for j, s := range seq {
			if words[i+j] != s {
				match = false
				break
			}
		}
		if match {
			return true
		}
	}
	return false
}

// Steers names what of p chooses more than the cluster its token is for:
// whose credentials make it, which resource it is for, where they are
// sent or which of the runner's files are read. A spec's kubeconfig may
// borrow the runner's own identity for a token of its cluster (the
// cluster's name and region; AKS's server and, as any kubeconfig from az
// carries them, the login, tenant and client) and nothing else: not the
// entry's env, another role or profile (EKS's --role-arn, --profile), a
// token for another Entra resource than AKS (--server-id: one for Azure
// Resource Manager or Key Vault would reach far past a cluster), another
// authority (--authority-host) or a file (--federated-token-file,
// --client-certificate). A secret the entry itself carries is its own.
// "" when p chooses none of those.
func (p Plugin) Steers() string {
	var what []string
	add := func(set bool, name string) {
		if set {
			what = append(what, name)
		}
	}
	add(len(p.Env) > 0, "env")
	add(p.EKS.RoleARN != "", "--role-arn")
	add(p.EKS.Profile != "", "--profile")
	add(p.AKS.ServerID != "" && p.AKS.ServerID != DefaultAKSServerID, "--server-id")
	add(p.AKS.AuthorityHost != "", "--authority-host")
	add(p.AKS.FederatedTokenFile != "", "--federated-token-file")
	add(p.AKS.ClientCertificate != "", "--client-certificate")
	return strings.Join(what, ", ")
}
