package kubernetes

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kusionpr/kusionpr/internal/confine"
	"github.com/kusionpr/kusionpr/runtime/kubernetes/cloudtoken"
)

// Allowance says what a kubeconfig in a spec's context may bring beyond a
// server and inline credentials (token, client-certificate-data,
// client-key-data, certificate-authority-data). A spec comes from the
// repository, a pull request's head included: each allowance hands its
// author a power of the runner, so all are off unless the operator turns
// them on.
type Allowance struct {
	// Exec lets a user's exec credential plugin run: the pull request's
	// author runs a command of their choice as the runner.
	Exec bool
	// AuthProvider lets a user name an auth-provider (client-go's oidc),
	// which fetches and refreshes tokens from where the kubeconfig says.
	AuthProvider bool
	// Files lets the kubeconfig name files (tokenFile, client-certificate,
	// client-key, certificate-authority) and KUBECONFIG_PATH point outside
	// the checkout: the author has any file the runner can read sent to a
	// server of their choice.
	Files bool
	// CloudIdentity lets a user name a managed cluster's credential plugin
	// (aws eks get-token, aws-iam-authenticator, gke-gcloud-auth-plugin,
	// kubelogin), whose token is computed in process from the runner's
	// cloud identity: nothing runs, but that token goes to the server the
	// author names. Exec does not bring it: the command would not run,
	// so allowing commands says nothing about lending the identity.
	CloudIdentity bool
}

// Allowance names, as the operator writes them in a list setting.
const (
	AllowExec         = "exec"
	AllowAuthProvider = "auth-provider"
	AllowFiles        = "files"
	AllowCloud        = "cloud-identity"
)

// ParseAllowance reads a list of allowance names; "none" and empty items
// add nothing.
func ParseAllowance(names []string) (Allowance, error) {
	var a Allowance
	for _, n := range names {
		switch strings.ToLower(strings.TrimSpace(n)) {
		case AllowExec:
			a.Exec = true
		case AllowAuthProvider:
			a.AuthProvider = true
		case AllowFiles:
			a.Files = true
		case AllowCloud:
			a.CloudIdentity = true
		case "", "none":
		default:
			return a, fmt.Errorf("unknown allowance %q: want %s, %s, %s or %s", n, AllowExec, AllowAuthProvider, AllowFiles, AllowCloud)
		}
	}
	return a, nil
}

// String lists the allowances, comma-separated ("none" for none).
func (a Allowance) String() string {
	var out []string
	if a.Exec {
		out = append(out, AllowExec)
	}
	if a.AuthProvider {
		out = append(out, AllowAuthProvider)
	}
	if a.Files {
		out = append(out, AllowFiles)
	}
	if a.CloudIdentity {
		out = append(out, AllowCloud)
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, ",")
}

// SpecContext is a spec's context, with what is needed to judge the
// kubeconfig it names.
type SpecContext struct {
	// Context is the spec's context (a workspace's, copied by generate).
	Context map[string]any
	// StackDir is the stack's folder: a relative KUBECONFIG_PATH, and
	// relative paths in KUBECONFIG_CONTENT, are relative to it.
	StackDir string
	// Root is the checkout: KUBECONFIG_PATH must lie in it (links
	// followed) unless Allow.Files. Empty means the stack folder.
	Root  string
	Allow Allowance
	// Setting names where the operator turns an allowance on, as the
	// errors tell: KUSIONPR_SPEC_KUBECONFIG_ALLOW for the bot, the
	// action's input or flag. Default "the operator's setting".
	Setting string
}

// ErrOutsideCheckout is returned, wrapped, when a spec's KUBECONFIG_PATH
// lies outside the checkout and the allowance does not permit it: the
// runner's file such a path names (Kusion's docs write /path/to/kubeconfig
// or ~/.kube/config) is not the spec's to choose, and an operator's
// kubeconfig may take its place (connect.Clusters).
var ErrOutsideCheckout = errors.New("the file lies outside the checkout")

// maxKubeconfig bounds the file KUBECONFIG_PATH names.
const maxKubeconfig = 1 << 20

// FromSpecContext checks the kubeconfig a spec's context names
// (KUBECONFIG_CONTENT, else KUBECONFIG_PATH) against sc.Allow and returns
// the Config reaching the cluster with it, the kubeconfig read once and
// held (Config.Loaded), so what was checked is what client-go uses. ok is
// false when the context names no kubeconfig. Nothing is contacted and
// nothing runs here. Errors name the context field, the kubeconfig's user
// or cluster and the allowance that would permit it, never a value.
func FromSpecContext(sc SpecContext) (c Config, ok bool, err error) {
	content, cerr := contextString(sc.Context, ContextKubeconfigContent)
	path, perr := contextString(sc.Context, ContextKubeconfigPath)
	if err := errors.Join(cerr, perr); err != nil {
		return c, false, err
	}
	var (
		raw    *clientcmdapi.Config
		field  string
		origin string
	)
	switch {
	case content != "":
		field = ContextKubeconfigContent
		// Relative paths in the content are relative to the stack, as
		// those of a file are to its folder.
		origin = filepath.Join(sc.StackDir, ContextKubeconfigContent)
		if raw, err = clientcmd.Load([]byte(content)); err != nil {
			return c, false, fmt.Errorf("spec context %s: not a kubeconfig: %w", field, loadError(err))
		}
	case path != "":
		field = ContextKubeconfigPath
		if origin, raw, err = sc.readPath(path); err != nil {
			return c, false, err
		}
	default:
		return c, false, nil
	}
	for _, v := range raw.Clusters {
		v.LocationOfOrigin = origin
	}
	for _, v := range raw.AuthInfos {
		v.LocationOfOrigin = origin
	}
	if err := clientcmd.ResolveLocalPaths(raw); err != nil {
		return c, false, fmt.Errorf("spec context %s: %w", field, err)
	}
	if err := sc.check(field, raw); err != nil {
		return c, false, err
	}
	// check let a cloud plugin through only behind its own allowance, so
	// computing its token here lends what the operator allowed.
	return Config{Loaded: raw, KubeconfigName: "the spec's context " + field, ForceConflicts: true, CloudTokens: sc.Allow.CloudIdentity}, true, nil
}

// readPath reads the kubeconfig file KUBECONFIG_PATH names: in the checkout
// (links followed) unless Allow.Files.
func (sc SpecContext) readPath(path string) (origin string, raw *clientcmdapi.Config, err error) {
	root := sc.Root
	if root == "" {
		root = sc.StackDir
	}
	real, err := confine.Resolve(root, sc.StackDir, path)
	if err != nil && !errors.Is(err, confine.ErrOutside) && outside(root, sc.StackDir, path) {
		// A file that does not exist is outside all the same when its
		// path leaves the checkout: it names the runner's, not the
		// repository's.
		err = confine.ErrOutside
	}
	switch {
	case errors.Is(err, confine.ErrOutside) && sc.Allow.Files:
		real, err = filepath.EvalSymlinks(absolute(sc.StackDir, expandHome(path)))
	case errors.Is(err, confine.ErrOutside):
		return "", nil, fmt.Errorf("spec context %s: %w, and a spec may name only files of its own repository; %s",
			ContextKubeconfigPath, ErrOutsideCheckout, sc.allowHint(AllowFiles))
	}
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", nil, fmt.Errorf("spec context %s: no such file (a relative path is relative to the stack's folder)", ContextKubeconfigPath)
		}
		return "", nil, fmt.Errorf("spec context %s: %w", ContextKubeconfigPath, err)
	}
	f, err := os.Open(real)
	if err != nil {
		return "", nil, fmt.Errorf("spec context %s: %w", ContextKubeconfigPath, pathless(err))
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxKubeconfig+1))
	if err != nil {
		return "", nil, fmt.Errorf("spec context %s: %w", ContextKubeconfigPath, pathless(err))
	}
	if len(b) > maxKubeconfig {
		return "", nil, fmt.Errorf("spec context %s: the file is larger than %d bytes", ContextKubeconfigPath, maxKubeconfig)
	}
	if raw, err = clientcmd.Load(b); err != nil {
		return "", nil, fmt.Errorf("spec context %s: not a kubeconfig: %w", ContextKubeconfigPath, loadError(err))
	}
	return real, raw, nil
}

// check refuses what the allowances do not permit, naming the first user
// or cluster (in name order) that brings it.
func (sc SpecContext) check(field string, raw *clientcmdapi.Config) error {
	var errs []error
	for _, name := range sortedKeys(raw.AuthInfos) {
		u := raw.AuthInfos[name]
		refuse := func(what, allowance string) {
			errs = append(errs, fmt.Errorf("spec context %s: user %s: %s is not allowed in a spec; %s", field, quoteName(name), what, sc.allowHint(allowance)))
		}
		if p, err := cloudtoken.Recognise(u.Exec); err == nil {
			// Computed in process, it runs nothing, but it hands over the
			// runner's cloud identity: its own allowance, whatever exec's.
			if !sc.Allow.CloudIdentity {
				refuse(fmt.Sprintf("the %s credential plugin (%s: its token, made from the runner's cloud identity, would be sent to the spec's server)", p.Cloud, u.Exec.Command), AllowCloud)
			} else if what := p.Steers(); what != "" {
				// cloud-identity lends a token of the runner's own
				// identity for the spec's cluster, nothing more.
				errs = append(errs, fmt.Errorf("spec context %s: user %s: the %s credential plugin sets %s: in a spec it takes the runner's environment as it is, so that only the runner's own identity makes a token, for a cluster, the runner's credentials go only to the cloud and no file of the runner is read", field, quoteName(name), p.Cloud, what))
			}
		} else if u.Exec != nil && !sc.Allow.Exec {
			refuse("exec (a credential plugin: it would run a command on the runner)", AllowExec)
		}
		if u.AuthProvider != nil && !sc.Allow.AuthProvider {
			refuse("auth-provider", AllowAuthProvider)
		}
		if !sc.Allow.Files {
			for _, f := range []struct{ key, val, inline string }{
				{"tokenFile", u.TokenFile, "token"},
				{"client-certificate", u.ClientCertificate, "client-certificate-data"},
				{"client-key", u.ClientKey, "client-key-data"},
			} {
				if f.val != "" {
					refuse(f.key+" (a file of the runner; write the "+f.inline+" inline instead)", AllowFiles)
				}
			}
		}
	}
	if !sc.Allow.Files {
		for _, name := range sortedKeys(raw.Clusters) {
			if raw.Clusters[name].CertificateAuthority != "" {
				errs = append(errs, fmt.Errorf("spec context %s: cluster %s: certificate-authority (a file of the runner; write certificate-authority-data inline instead) is not allowed in a spec; %s",
					field, quoteName(name), sc.allowHint(AllowFiles)))
			}
		}
	}
	return errors.Join(errs...)
}

func (sc SpecContext) allowHint(allowance string) string {
	setting := sc.Setting
	if setting == "" {
		setting = "the operator's setting"
	}
	return fmt.Sprintf("the operator allows it by adding %s to %s", allowance, setting)
}

func contextString(ctx map[string]any, key string) (string, error) {
	v, ok := ctx[key]
	if !ok || v == nil {
		return "", nil
	}
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("spec context %s: want a string, got a %T", key, v)
	}
	return s, nil
}

// quoteName quotes a name from the repository for a message, cut short.
func quoteName(s string) string {
	if len(s) > 64 {
		s = s[:64] + "…"
	}
	return fmt.Sprintf("%q", s)
}

// outside says whether path, as written, leaves root: absolute and not in
// it, under the home folder (~), or climbing out with "..". Links are
// followed by confine.Resolve; this is for a path that does not exist.
func outside(root, base, path string) bool {
	if path == "~" || strings.HasPrefix(path, "~/") {
		return true
	}
	return !confine.WithinLexically(root, absolute(base, path))
}

// expandHome reads a leading ~ as the home folder, as a shell would.
func expandHome(p string) string {
	if p != "~" && !strings.HasPrefix(p, "~/") {
		return p
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return p
	}
	return filepath.Join(home, strings.TrimPrefix(p, "~"))
}

func absolute(base, p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(base, p)
}

// pathless drops the path from a file error: it is the repository's value.
func pathless(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// loadError is clientcmd.Load's error without the content it may quote
// (YAML errors cite the offending line).
func loadError(err error) error {
	msg := err.Error()
	if i := strings.Index(msg, "\n"); i >= 0 {
		msg = msg[:i]
	}
	if len(msg) > 200 {
		msg = msg[:200] + "…"
	}
	return errors.New(msg)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
