package runtimes

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
// if SpecAllow permits what it brings; else the process's own ($KUBECONFIG,
// ~/.kube/config) unless Kubeconfig names the operator's, else the pod's
// ServiceAccount.
type Clusters struct {
	// Kubeconfigs maps a workspace to the kubeconfig file its stacks use,
	// whatever their spec's context says.
	Kubeconfigs map[string]string
	// Kubeconfig is the operator's kubeconfig file for the stacks neither
	// Kubeconfigs nor their spec gives one (the action's input kubeconfig),
	// handed over as a value rather than through $KUBECONFIG.
	Kubeconfig string
	// KubeconfigName is what the operator calls Kubeconfig ("input
	// kubeconfig"), for the errors of a stack that uses it.
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
			log.Info("the spec's kubeconfig is ignored: the operator set one for the workspace", "workspace", workspace)
		}
		return kubernetes.Config{Kubeconfig: path, ForceConflicts: true}, nil
	}
	cfg, ok, err := kubernetes.FromSpecContext(kubernetes.SpecContext{
		Context: specCtx, StackDir: st.Path, Root: root, Allow: c.SpecAllow, Setting: c.Setting,
	})
	if err != nil {
		return cfg, fmt.Errorf("stack %s: %w", st.Path, err)
	}
	if !ok {
		cfg = kubernetes.Config{Kubeconfig: c.Kubeconfig, KubeconfigName: c.KubeconfigName, ForceConflicts: true}
	}
	return cfg, nil
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
