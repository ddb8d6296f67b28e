package connect

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/kusionpr/kusionpr/engine/project"
	"github.com/kusionpr/kusionpr/model"
	"github.com/kusionpr/kusionpr/runtime/kubernetes"
)

// Clusters is the operator's say on how stacks reach their cluster. In
// order: the kubeconfig Kubeconfigs names for the stack's workspace; else
// the one the spec's context names (KUBECONFIG_CONTENT or KUBECONFIG_PATH),
// if SpecAllow permits what it brings; else the operator's own
// (KubeconfigContent or Kubeconfig, the action's input), else the
// process's ($KUBECONFIG, ~/.kube/config), else the pod's ServiceAccount.
//
// A spec's KUBECONFIG_PATH outside the checkout names a file of the runner
// (Kusion's workspaces write /path/to/kubeconfig or ~/.kube/config): with
// "files" allowed it is read; otherwise the operator's own kubeconfig
// takes its place when there is one, and the stack is refused when there
// is none. Nothing of the spec's chooses how to authenticate either way.
//
// The operator's kubeconfigs get the managed clusters' exec plugins (aws
// eks get-token, gke-gcloud-auth-plugin, kubelogin) computed in process
// (kubernetes.Config.CloudTokens): the image has none of those commands.
// A spec's gets it only where SpecAllow has cloud-identity.
type Clusters struct {
	// Kubeconfigs maps a workspace to the kubeconfig file its stacks use,
	// whatever their spec's context says.
	Kubeconfigs map[string]string
	// KubeconfigsName is what the operator calls Kubeconfigs ("the input
	// kubeconfigs", KUSIONPR_KUBECONFIGS), for errors and logs.
	KubeconfigsName string
	// Kubeconfig is the operator's kubeconfig file for the stacks neither
	// Kubeconfigs nor their spec gives one, handed over as a value rather
	// than through $KUBECONFIG. KubeconfigContent, when set, is the same
	// as content: kept in memory, no file of it lies on the runner for a
	// provider or a generator to read.
	Kubeconfig        string
	KubeconfigContent string
	// KubeconfigName is what the operator calls Kubeconfig or
	// KubeconfigContent ("the input kubeconfig"), for the errors of a
	// stack that uses it.
	KubeconfigName string
	// SpecAllow is what a spec's kubeconfig may bring beyond a server and
	// inline credentials; nothing by default.
	SpecAllow kubernetes.Allowance
	// Setting names where the operator changes SpecAllow, for the errors
	// (KUSIONPR_SPEC_KUBECONFIG_ALLOW, the action's input or flag).
	Setting string
}

// kubernetesConfig is how the stack reaches its cluster (see Clusters). A
// spec's kubeconfig is checked and read here, before any client exists.
func (c Clusters) kubernetesConfig(st *project.Stack, workspace string, spec *model.Spec, root string, log *slog.Logger) (kubernetes.Config, error) {
	var specCtx map[string]any
	if spec != nil {
		specCtx = spec.Context
	}
	if path := c.Kubeconfigs[workspace]; path != "" {
		if specCtx[kubernetes.ContextKubeconfigPath] != nil || specCtx[kubernetes.ContextKubeconfigContent] != nil {
			log.Info("the spec's kubeconfig is ignored: the operator set one for the workspace", "workspace", workspace, "setting", c.KubeconfigsName)
		}
		name := "workspace " + workspace
		if c.KubeconfigsName != "" {
			name = c.KubeconfigsName + ", " + name
		}
		return kubernetes.Config{Kubeconfig: path, KubeconfigName: name, ForceConflicts: true, CloudTokens: true}, nil
	}
	cfg, ok, err := kubernetes.FromSpecContext(kubernetes.SpecContext{
		Context: specCtx, StackDir: st.Path, Root: root, Allow: c.SpecAllow, Setting: c.Setting,
	})
	operator := c.Kubeconfig != "" || c.KubeconfigContent != ""
	switch {
	case errors.Is(err, kubernetes.ErrOutsideCheckout) && operator:
		// The runner's file the spec names is not the spec's to pick;
		// the operator's kubeconfig is the one meant for this runner.
		log.Info("the spec's "+kubernetes.ContextKubeconfigPath+" lies outside the checkout: the stack uses the operator's kubeconfig instead",
			"workspace", workspace, "kubeconfig", c.KubeconfigName)
		ok = false
	case errors.Is(err, kubernetes.ErrOutsideCheckout):
		if hint := c.operatorSettings(); hint != "" {
			err = fmt.Errorf("%w; or the operator gives the stacks a kubeconfig (%s), which takes its place", err, hint)
		}
		return cfg, fmt.Errorf("stack %s: %w", st.Path, err)
	case err != nil:
		return cfg, fmt.Errorf("stack %s: %w", st.Path, err)
	}
	if !ok {
		cfg = kubernetes.Config{Kubeconfig: c.Kubeconfig, KubeconfigContent: c.KubeconfigContent, KubeconfigName: c.KubeconfigName, ForceConflicts: true, CloudTokens: true}
	}
	return cfg, nil
}

// operatorSettings names the settings giving the stacks an operator's
// kubeconfig, for a refusal's hint; "" when none is known.
func (c Clusters) operatorSettings() string {
	var names []string
	for _, n := range []string{c.KubeconfigName, c.KubeconfigsName} {
		if n != "" {
			names = append(names, n)
		}
	}
	return strings.Join(names, " or ")
}

// ParseKubeconfigs reads the operator's WORKSPACE=FILE pairs (comma- or
// newline-separated) into Clusters.Kubeconfigs, naming every pair it cannot
// read.
func ParseKubeconfigs(s string) (map[string]string, error) {
	out := map[string]string{}
	var errs []error
	for _, kv := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == '\n' }) {
		if strings.TrimSpace(kv) == "" {
			continue
		}
		ws, path, ok := strings.Cut(kv, "=")
		if ws, path = strings.TrimSpace(ws), strings.TrimSpace(path); !ok || ws == "" || path == "" {
			errs = append(errs, fmt.Errorf("%q: want WORKSPACE=FILE", kv))
			continue
		}
		out[ws] = path
	}
	return out, errors.Join(errs...)
}
