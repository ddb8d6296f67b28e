package main

import (
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/kusionpr/kusionpr/connect"
	"github.com/kusionpr/kusionpr/engine/kcl"
	"github.com/kusionpr/kusionpr/internal/confine"
	"github.com/kusionpr/kusionpr/runtime/kubernetes"
	"github.com/kusionpr/kusionpr/workflow"
)

// clusterSettings are the flags saying how stacks reach their cluster and
// what module binaries see: the operator's, each defaulting to the bot's
// environment variable of the same meaning.
type clusterSettings struct {
	specAllow, kubeconfigs, moduleEnv *string
}

func clusterFlags(fs *flag.FlagSet) clusterSettings {
	return clusterSettings{
		specAllow: fs.String("spec-kubeconfig-allow", os.Getenv("KUSIONPR_SPEC_KUBECONFIG_ALLOW"),
			"what a spec's kubeconfig (context KUBECONFIG_CONTENT or KUBECONFIG_PATH) may bring, comma-separated: exec, auth-provider, files (default none: a server and inline credentials only; env KUSIONPR_SPEC_KUBECONFIG_ALLOW)"),
		kubeconfigs: fs.String("kubeconfigs", os.Getenv("KUSIONPR_KUBECONFIGS"),
			"WORKSPACE=FILE,...: the kubeconfig the stacks of each workspace use, whatever their spec says (env KUSIONPR_KUBECONFIGS)"),
		moduleEnv: fs.String("module-env", os.Getenv("KUSIONPR_MODULE_ENV"),
			"comma-separated names of environment variables Kusion module binaries get besides PATH, HOME, TMPDIR, locale and proxies (env KUSIONPR_MODULE_ENV)"),
	}
}

// apply puts the settings into r and f.
func (c clusterSettings) apply(r *workflow.Runner, f *connect.Factory) error {
	allow, err := kubernetes.ParseAllowance(list(*c.specAllow))
	if err != nil {
		return fmt.Errorf("--spec-kubeconfig-allow: %w", err)
	}
	kubeconfigs, err := connect.ParseKubeconfigs(*c.kubeconfigs)
	if err != nil {
		return fmt.Errorf("--kubeconfigs: %w", err)
	}
	f.Clusters = connect.Clusters{Kubeconfigs: kubeconfigs, KubeconfigsName: "--kubeconfigs", SpecAllow: allow, Setting: "--spec-kubeconfig-allow"}
	r.ModuleEnv = list(*c.moduleEnv)
	return nil
}

// repositoryRoot is the folder holding .git at or above the stack: on
// one's own machine the checkout whose files a spec may name and above
// which project.yaml and workspaces/ are not looked for. "" when there is
// none: the stack's folder then bounds what its spec may name.
func repositoryRoot(stack string) string {
	abs, err := filepath.Abs(stack)
	if err != nil {
		return ""
	}
	for d := abs; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, ".git")); err == nil {
			return d
		}
		if filepath.Dir(d) == d {
			return ""
		}
	}
}

// kubeconfigsInput reads the input kubeconfigs (WORKSPACE=FILE pairs, as
// the bot's KUSIONPR_KUBECONFIGS) and the secrets of the files it names,
// for the redactor. A file must lie outside the checkout once links are
// followed: one in it is the pull request's, which would then choose how
// the stacks authenticate. Errors name the workspace and the file, never
// what it holds.
func kubeconfigsInput(s, checkout string) (map[string]string, []string, error) {
	pairs, err := connect.ParseKubeconfigs(s)
	if err != nil {
		return nil, nil, err
	}
	var (
		secrets []string
		errs    []error
	)
	for _, ws := range slices.Sorted(maps.Keys(pairs)) {
		path := pairs[ws]
		if !filepath.IsAbs(path) {
			// Relative to the job's workspace, which is the checkout:
			// refused below, but named as the job would find it.
			path = filepath.Join(checkout, path)
		}
		real, err := filepath.EvalSymlinks(path)
		if err != nil {
			errs = append(errs, fmt.Errorf("workspace %s: %s: %w", ws, pairs[ws], pathless(err)))
			continue
		}
		// A link in the checkout is the pull request's too, wherever it
		// points: the path as written must stay out of it as well.
		if confine.Within(checkout, real) || confine.WithinLexically(checkout, path) {
			errs = append(errs, fmt.Errorf("workspace %s: %s lies in the checkout, which a pull request writes: name a file outside it (one an earlier step wrote from a secret, e.g. under $RUNNER_TEMP)", ws, pairs[ws]))
			continue
		}
		b, err := os.ReadFile(real)
		if err != nil {
			errs = append(errs, fmt.Errorf("workspace %s: %s: %w", ws, pairs[ws], pathless(err)))
			continue
		}
		pairs[ws] = real
		secrets = append(secrets, kubeconfigSecrets(string(b))...)
	}
	return pairs, secrets, errors.Join(errs...)
}

// pathless drops the path from a file error: the message names it once.
func pathless(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// useKCL gives r the process's KCL (engine/kcl: its settings are
// variables of the environment, the same names in every door). The
// returned function ends its runtimes: defer it.
func useKCL(r *workflow.Runner, log *slog.Logger) (done func(), err error) {
	setup, err := kcl.SetupFrom(os.Getenv, log)
	if err != nil {
		return func() {}, fmt.Errorf("KCL settings: %w", err)
	}
	r.KCL = setup
	return func() { _ = setup.Close() }, nil
}
