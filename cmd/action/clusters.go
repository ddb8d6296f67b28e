package main

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/kusionpr/kusionpr/internal/confine"
)

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

// kubeconfigsInput checks the files of the input kubeconfigs (WORKSPACE=FILE
// pairs, as the bot's KUSIONPR_KUBECONFIGS), and reads the secrets of each,
// for the redactor: pairs with each file's real path. A file must lie
// outside the checkout once links are followed: one in it is the pull
// request's, which would then choose how the stacks authenticate. Errors
// name the workspace and the file, never what it holds.
func kubeconfigsInput(given map[string]string, checkout string) (map[string]string, []string, error) {
	pairs := maps.Clone(given)
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
