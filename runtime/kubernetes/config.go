package kubernetes

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kusionpr/kusionpr/runtime/kubernetes/cloudtoken"
)

// Context keys of a Spec (or workspace) that locate the cluster. A spec's
// are checked (FromSpecContext) before use.
const (
	ContextKubeconfigPath    = "KUBECONFIG_PATH"
	ContextKubeconfigContent = "KUBECONFIG_CONTENT"
)

// Defaults applied by New to zero Config fields.
const (
	DefaultFieldManager = "kusionpr"
	DefaultReadyTimeout = 5 * time.Minute
	// DefaultProgressInterval is how often a wait tells Progress about an
	// object it still waits for, when nothing about it changed.
	DefaultProgressInterval = 10 * time.Second
)

// Config says how to reach a cluster and how to change it. The zero value of
// every field but ForceConflicts means "the default".
type Config struct {
	// Kubeconfig is a kubeconfig file path. KubeconfigContent, when set, wins,
	// and Loaded over both. With none, $KUBECONFIG then ~/.kube/config are
	// used (client-go's loading rules), then the in-cluster service account.
	Kubeconfig        string
	KubeconfigContent string
	// KubeconfigName is what the operator calls Kubeconfig ("input
	// kubeconfig"), for errors: the path may be a file they never wrote.
	KubeconfigName string
	// Loaded is a kubeconfig already read and checked (FromSpecContext):
	// used as it is, never read again.
	Loaded *clientcmdapi.Config
	// Context selects a kubeconfig context other than the current one.
	Context string

	// FieldManager owns the fields we apply (server-side apply). Default "kusionpr".
	FieldManager string
	// ForceConflicts takes fields over from other managers. Callers default
	// it to true: the spec is the source of truth.
	ForceConflicts bool
	// ReadyTimeout bounds Watch and the wait for a deleted object to be gone. Default 5m.
	ReadyTimeout time.Duration
	// Progress, if set, hears about every object a wait is not done with:
	// when the wait starts, whenever the reason changes, and at least every
	// ProgressInterval (default 10s) while it lasts.
	Progress         Progress
	ProgressInterval time.Duration
	// QPS and Burst, when QPS is positive, limit the client's request rate
	// (Burst defaults to twice QPS). By default there is no client-side
	// limit: the engine's parallelism bounds the requests in flight, and the
	// API server's priority and fairness answers 429 (which client-go
	// retries) when it is busy. A fixed rate capped every large stack at it:
	// at 200 per second a 1,000-object apply (three requests an object) took
	// 15 s where the server needed 3.
	QPS   float32
	Burst int

	// Logger receives debug logs (ids and actions only, never object contents)
	// and the server's warnings. Default: discard.
	Logger *slog.Logger

	// WrapTransport, if set, wraps the HTTP transport of every client (for
	// metrics, tracing or tests counting requests).
	WrapTransport func(http.RoundTripper) http.RoundTripper

	// CloudTokens computes the token of a well-known managed-cluster exec
	// plugin (aws eks get-token, aws-iam-authenticator,
	// gke-gcloud-auth-plugin, kubelogin get-token) in process with the
	// cloud's SDK and the runner's cloud identity, instead of running the
	// command (the image has none of them); other exec entries, and
	// kubelogin's modes that run az or need a person, are left to
	// client-go as before. The operator's kubeconfigs set it (connect). A
	// spec's kubeconfig names the server the runner's cloud token is sent
	// to, so FromSpecContext sets it only where the operator allows
	// cloud-identity, and refuses an entry that steers it further
	// (cloudtoken.Plugin.Steers).
	CloudTokens bool
}

func (c Config) withDefaults() Config {
	if c.FieldManager == "" {
		c.FieldManager = DefaultFieldManager
	}
	if c.ReadyTimeout <= 0 {
		c.ReadyTimeout = DefaultReadyTimeout
	}
	if c.ProgressInterval <= 0 {
		c.ProgressInterval = DefaultProgressInterval
	}
	switch {
	case c.QPS <= 0:
		// client-go takes a negative QPS as "no rate limiter" (zero would
		// mean its own default of 5).
		c.QPS, c.Burst = -1, 0
	case c.Burst <= 0:
		c.Burst = int(2 * c.QPS)
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// restConfig resolves the kubeconfig: content, then path, then $KUBECONFIG and
// ~/.kube/config (clientcmd's loading rules), then in-cluster.
func (c Config) restConfig() (*rest.Config, error) {
	rc, _, err := c.resolve()
	return rc, err
}

// resolve is restConfig, also saying which kubeconfig, context and server
// it chose, for the errors of a cluster that cannot be reached.
func (c Config) resolve() (*rest.Config, ClusterRef, error) {
	overrides := &clientcmd.ConfigOverrides{CurrentContext: c.Context}
	var (
		cc  clientcmd.ClientConfig
		ref ClusterRef
	)
	switch {
	case c.Loaded != nil:
		cc = clientcmd.NewDefaultClientConfig(*c.Loaded, overrides)
		ref.Kubeconfig = cmp.Or(c.KubeconfigName, "the spec's kubeconfig")
	case c.KubeconfigContent != "":
		raw, err := clientcmd.Load([]byte(c.KubeconfigContent))
		if err != nil {
			// Not clientcmd's error: a YAML error quotes the content.
			return nil, ref, fmt.Errorf("parse %s: %w", cmp.Or(c.KubeconfigName, ContextKubeconfigContent), loadError(err))
		}
		cc = clientcmd.NewDefaultClientConfig(*raw, overrides)
		ref.Kubeconfig = cmp.Or(c.KubeconfigName, "the kubeconfig given as content")
	default:
		rules := clientcmd.NewDefaultClientConfigLoadingRules()
		if c.Kubeconfig != "" {
			rules.ExplicitPath = c.Kubeconfig
		}
		cc = clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides)
		switch env := os.Getenv(clientcmd.RecommendedConfigPathEnvVar); {
		case c.Kubeconfig != "" && c.KubeconfigName != "":
			ref.Kubeconfig = c.Kubeconfig + " (" + c.KubeconfigName + ")"
		case c.Kubeconfig != "":
			ref.Kubeconfig = c.Kubeconfig
		case env != "":
			ref.Kubeconfig = env + " ($KUBECONFIG)"
		default:
			ref.Kubeconfig = clientcmd.RecommendedHomeFile + " (~/.kube/config)"
		}
	}
	rc, err := cc.ClientConfig()
	if err != nil {
		if clientcmd.IsEmptyConfig(err) && c.Loaded == nil && c.KubeconfigContent == "" && c.Kubeconfig == "" {
			// client-go's words ("try setting KUBERNETES_MASTER") name
			// neither where it looked nor what a user of ours would set.
			return nil, ref, noCluster(lookedIn{
				kubeconfigEnv: os.Getenv(clientcmd.RecommendedConfigPathEnvVar),
				homeFile:      clientcmd.RecommendedHomeFile,
				serviceHost:   os.Getenv("KUBERNETES_SERVICE_HOST"),
				tokenFile:     serviceAccountToken,
			})
		}
		if c.Kubeconfig != "" {
			where := c.Kubeconfig
			if c.KubeconfigName != "" {
				where += " (" + c.KubeconfigName + ")"
			}
			if clientcmd.IsEmptyConfig(err) && c.Loaded == nil && c.KubeconfigContent == "" {
				// Not client-go's "try setting KUBERNETES_MASTER": the
				// file named is what is wrong.
				return nil, ref, fmt.Errorf("load kubeconfig %s: the file %s", where, fileState(c.Kubeconfig))
			}
			return nil, ref, fmt.Errorf("load kubeconfig %s: %w", where, err)
		}
		return nil, ref, fmt.Errorf("load kubeconfig %s: %w", ref.Kubeconfig, err)
	}
	if raw, err := cc.RawConfig(); err == nil && (c.Context != "" || raw.CurrentContext != "") {
		ref.Context = cmp.Or(c.Context, raw.CurrentContext)
	} else if c.Loaded == nil && c.KubeconfigContent == "" && c.Kubeconfig == "" {
		// No kubeconfig gave a context: client-go fell back to the pod's.
		ref.Kubeconfig = "the pod's ServiceAccount (in-cluster)"
	}
	ref.Server = serverName(rc.Host)
	rc = rest.CopyConfig(rc)
	rc.QPS, rc.Burst = c.QPS, c.Burst
	rc.UserAgent = "kusionpr"
	rc.WarningHandler = slogWarnings{c.Logger}
	if c.CloudTokens && rc.ExecProvider != nil {
		// Before WrapTransport, so the caller's wrapper sees the bearer
		// token's requests as it saw the exec plugin's.
		p, err := cloudtoken.Recognise(rc.ExecProvider)
		switch {
		case errors.Is(err, cloudtoken.ErrNotRecognised):
		case err != nil:
			return nil, ref, fmt.Errorf("load kubeconfig %s: %w", ref.Kubeconfig, err)
		default:
			src := cloudtoken.NewLazySource(p, cloudtoken.Options{})
			cloudtoken.Configure(rc, src)
			ref.tokens = src
		}
	}
	if c.WrapTransport != nil {
		rc.Wrap(c.WrapTransport)
	}
	return rc, ref, nil
}

// ClusterRef says how a runtime reaches its cluster: which kubeconfig (a
// file or the setting that named it, never its content), context and
// server. Errors of a cluster that cannot be reached carry it.
type ClusterRef struct {
	Kubeconfig, Context, Server string
	// tokens is the in-process cloud token source, if the kubeconfig's
	// user is a managed cluster's plugin: a refused token names it.
	tokens interface{ Describe() string }
}

func (r ClusterRef) String() string {
	var parts []string
	if r.Server != "" {
		parts = append(parts, "server "+r.Server)
	}
	if r.Context != "" {
		parts = append(parts, "context "+quoteName(r.Context))
	}
	if r.Kubeconfig != "" {
		parts = append(parts, "kubeconfig "+r.Kubeconfig)
	}
	return strings.Join(parts, ", ")
}

// serverName is the API server's URL without credentials a kubeconfig may
// have written into it (https://user:password@host).
func serverName(host string) string {
	u, err := url.Parse(host)
	if err != nil || u.Host == "" {
		if i := strings.LastIndex(host, "@"); i >= 0 {
			return host[i+1:]
		}
		return host
	}
	u.User = nil
	return u.String()
}

// ReachError is an error of a request that did not get an answer from
// the cluster (a refused or timed out connection, TLS, DNS) or was refused
// its credentials (401): it names the kubeconfig, context and server used,
// which are what a user checks.
type ReachError struct {
	Cluster ClusterRef
	Err     error
}

func (e *ReachError) Error() string {
	if e.Cluster.tokens != nil && apierrors.IsUnauthorized(e.Err) {
		// Which identity the cluster refused is what to fix: its
		// access entry, role binding or federated credential.
		if d := e.Cluster.tokens.Describe(); d != "" {
			return fmt.Sprintf("%v: the cluster refused the %s (cluster: %s)", e.Err, d, e.Cluster)
		}
	}
	return fmt.Sprintf("%v (cluster: %s)", e.Err, e.Cluster)
}

func (e *ReachError) Unwrap() error { return e.Err }

// reach wraps err in a ReachError when it is one of reaching the cluster
// and is not one already.
func (r *Runtime) reach(err error) error {
	var re *ReachError
	if err == nil || errors.As(err, &re) || !unreached(err) {
		return err
	}
	return &ReachError{Cluster: r.cluster, Err: err}
}

// unreached says whether err is, or holds, a request that got no answer
// from the server, or a 401. Discovery reports failed groups in errors
// that do not unwrap, so those are looked into.
func unreached(err error) bool {
	var ue *url.Error
	if errors.As(err, &ue) || apierrors.IsUnauthorized(err) {
		return true
	}
	var gd *discovery.ErrGroupDiscoveryFailed
	if errors.As(err, &gd) {
		for _, e := range gd.Groups {
			if unreached(e) {
				return true
			}
		}
	}
	var agg utilerrors.Aggregate
	if errors.As(err, &agg) {
		for _, e := range agg.Errors() {
			if unreached(e) {
				return true
			}
		}
	}
	return false
}

// serviceAccountToken is where a pod's ServiceAccount token is mounted
// (client-go's in-cluster configuration reads it there).
const serviceAccountToken = "/var/run/secrets/kubernetes.io/serviceaccount/token"

// lookedIn is where a cluster was looked for, when none was found.
type lookedIn struct {
	kubeconfigEnv string // $KUBECONFIG, a list of files
	homeFile      string // ~/.kube/config
	serviceHost   string // $KUBERNETES_SERVICE_HOST, set in a pod
	tokenFile     string // the pod's ServiceAccount token
}

// noCluster says where no cluster was found, in the order client-go
// looked, and what to do.
func noCluster(l lookedIn) error {
	var where []string
	where = append(where, "the spec's context names no kubeconfig ("+ContextKubeconfigPath+" or "+ContextKubeconfigContent+")")
	if l.kubeconfigEnv == "" {
		where = append(where, "$KUBECONFIG is not set")
		where = append(where, "~/.kube/config ("+l.homeFile+") "+fileState(l.homeFile))
	} else {
		for _, f := range filepath.SplitList(l.kubeconfigEnv) {
			if f != "" {
				where = append(where, "$KUBECONFIG names "+f+", which "+fileState(f))
			}
		}
		where = append(where, "~/.kube/config was not read, as $KUBECONFIG is set")
	}
	switch _, err := os.Stat(l.tokenFile); {
	case l.serviceHost == "":
		where = append(where, "not in a pod ($KUBERNETES_SERVICE_HOST is not set)")
	case err != nil:
		where = append(where, "no ServiceAccount token at "+l.tokenFile)
	}
	return fmt.Errorf("load kubeconfig: no cluster found: %s. Set KUBECONFIG to your cluster's kubeconfig file (export KUBECONFIG=/path/to/kubeconfig), "+
		"create ~/.kube/config, or name one in the workspace's context (%s)", strings.Join(where, "; "), ContextKubeconfigPath)
}

// fileState says why a kubeconfig file gave no cluster.
func fileState(path string) string {
	switch _, err := os.Stat(path); {
	case errors.Is(err, fs.ErrNotExist):
		return "does not exist"
	case err != nil:
		return "cannot be read: " + err.Error()
	}
	return "holds no current context"
}

type slogWarnings struct{ l *slog.Logger }

func (w slogWarnings) HandleWarningHeader(code int, agent, message string) {
	if code == 299 && message != "" {
		w.l.Warn("kubernetes API warning", "message", message)
	}
}
