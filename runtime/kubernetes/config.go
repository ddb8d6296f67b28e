package kubernetes

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
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
	overrides := &clientcmd.ConfigOverrides{CurrentContext: c.Context}
	var cc clientcmd.ClientConfig
	switch {
	case c.Loaded != nil:
		cc = clientcmd.NewDefaultClientConfig(*c.Loaded, overrides)
	case c.KubeconfigContent != "":
		raw, err := clientcmd.Load([]byte(c.KubeconfigContent))
		if err != nil {
			return nil, fmt.Errorf("parse %s: %w", ContextKubeconfigContent, err)
		}
		cc = clientcmd.NewDefaultClientConfig(*raw, overrides)
	default:
		rules := clientcmd.NewDefaultClientConfigLoadingRules()
		if c.Kubeconfig != "" {
			rules.ExplicitPath = c.Kubeconfig
		}
		cc = clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides)
	}
	rc, err := cc.ClientConfig()
	if err != nil {
		if clientcmd.IsEmptyConfig(err) && c.Loaded == nil && c.KubeconfigContent == "" && c.Kubeconfig == "" {
			// client-go's words ("try setting KUBERNETES_MASTER") name
			// neither where it looked nor what a user of ours would set.
			return nil, noCluster(lookedIn{
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
				return nil, fmt.Errorf("load kubeconfig %s: the file %s", where, fileState(c.Kubeconfig))
			}
			return nil, fmt.Errorf("load kubeconfig %s: %w", where, err)
		}
		return nil, fmt.Errorf("load kubeconfig: %w", err)
	}
	rc = rest.CopyConfig(rc)
	rc.QPS, rc.Burst = c.QPS, c.Burst
	rc.UserAgent = "kusionpr"
	rc.WarningHandler = slogWarnings{c.Logger}
	if c.WrapTransport != nil {
		rc.Wrap(c.WrapTransport)
	}
	return rc, nil
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
