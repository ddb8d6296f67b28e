// Package project finds a Kusion project and its stacks on disk: a project
// folder holds project.yaml; each stack folder below it holds stack.yaml and
// one of a ready spec.yaml (as `kusion generate` writes it), main.k (Kusion's
// own input, KCL, with its kcl.mod; engine/kcl compiles it) or main.yaml,
// the stack's AppConfigurations as main.k compiles to. engine/generate turns
// the AppConfigurations into a Spec with a workspace (workspaces/<name>.yaml
// in the project or a folder above).
package project

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/kusionpr/kusionpr/engine/spec"
	"github.com/kusionpr/kusionpr/internal/confine"
	"github.com/kusionpr/kusionpr/model"
)

const (
	ProjectFile = "project.yaml"
	StackFile   = "stack.yaml"
	SpecFile    = "spec.yaml"
	// AppFile holds a stack's AppConfigurations in YAML: what Kusion's
	// main.k compiles to.
	AppFile = "main.yaml"
	// KCLFile is Kusion's own input: AppConfigurations in KCL, compiled
	// with the kcl.mod beside it (or above it).
	KCLFile = "main.k"
)

// Project is project.yaml, in Kusion's shape.
type Project struct {
	Name        string            `json:"name"`
	Description string            `json:"description,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Extensions  []map[string]any  `json:"extensions,omitempty"`
	// Path is the folder holding project.yaml.
	Path string `json:"-"`
}

// Stack is stack.yaml, in Kusion's shape, with where it was found.
type Stack struct {
	Name        string            `json:"name"`
	Description string            `json:"description,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	// Workspace names the workspace the stack is generated and released
	// with, as Kusion's stack.yaml may.
	Workspace  string           `json:"workspace,omitempty"`
	Extensions []map[string]any `json:"extensions,omitempty"`
	// Path is the folder holding stack.yaml.
	Path string `json:"-"`
	// Root is the checkout the stack was loaded from (see LoadStack); ""
	// for none.
	Root    string   `json:"-"`
	Project *Project `json:"-"`
}

// LoadStack reads the stack in dir and the project above it. root, when
// set, is the checkout dir lies in: project.yaml and workspaces/ are looked
// for up to it and never above (a checkout sits in a shared folder such as
// /tmp, whose files are nobody's project), and a project, workspace or
// input file that is a link leading out of it is refused. With root empty
// (a stack on one's own machine) project.yaml is looked for up to the
// filesystem's root, and workspaces up to the folder holding .git.
func LoadStack(root, dir string) (*Stack, error) {
	abs, root, err := absolute(root, dir)
	if err != nil {
		return nil, err
	}
	var st Stack
	if err := readYAML(filepath.Join(abs, StackFile), &st); err != nil {
		return nil, err
	}
	if st.Name == "" {
		st.Name = filepath.Base(abs)
	}
	st.Path, st.Root = abs, root
	p, err := FindProject(root, abs)
	if err != nil {
		return nil, fmt.Errorf("stack %s: %w", dir, err)
	}
	st.Project = p
	return &st, nil
}

// DeletedStack stands for a stack whose folder a change removed: named after
// its folder (its stack.yaml is gone), in the project above it, so what its
// releases hold can still be previewed for destruction and destroyed. root
// is as for LoadStack.
func DeletedStack(root, dir string) (*Stack, error) {
	abs, root, err := absolute(root, dir)
	if err != nil {
		return nil, err
	}
	p, err := FindProject(root, filepath.Dir(abs))
	if err != nil {
		return nil, fmt.Errorf("deleted stack %s: %w", dir, err)
	}
	return &Stack{Name: filepath.Base(abs), Path: abs, Root: root, Project: p}, nil
}

// absolute makes dir and root absolute and checks that dir lies in root.
func absolute(root, dir string) (absDir, absRoot string, err error) {
	if absDir, err = filepath.Abs(dir); err != nil {
		return "", "", fmt.Errorf("stack %s: %w", dir, err)
	}
	if root == "" {
		return absDir, "", nil
	}
	if absRoot, err = filepath.Abs(root); err != nil {
		return "", "", fmt.Errorf("checkout %s: %w", root, err)
	}
	if !inside(absRoot, absDir) {
		return "", "", fmt.Errorf("stack %s is not inside the checkout %s", dir, root)
	}
	return absDir, absRoot, nil
}

// inside says whether the clean absolute path lies in root, as written.
func inside(root, path string) bool {
	rel, err := filepath.Rel(root, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// FindProject reads the nearest project.yaml at or above dir, up to root
// when root is set (see LoadStack), else up to the filesystem's root.
func FindProject(root, dir string) (*Project, error) {
	for d := range upTo(root, dir) {
		path := filepath.Join(d, ProjectFile)
		ok, err := present(root, path)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		var p Project
		if err := readYAML(path, &p); err != nil {
			return nil, err
		}
		if p.Name == "" {
			return nil, fmt.Errorf("%s: name is required", path)
		}
		p.Path = d
		return &p, nil
	}
	if root != "" {
		return nil, fmt.Errorf("no %s in %s or any folder above it up to the checkout's root", ProjectFile, dir)
	}
	return nil, fmt.Errorf("no %s in %s or any folder above it", ProjectFile, dir)
}

// upTo yields dir and each folder above it, ending with root (when set and
// dir lies in it) or the filesystem's root.
func upTo(root, dir string) func(yield func(string) bool) {
	return func(yield func(string) bool) {
		if root != "" && !inside(root, dir) {
			return
		}
		for d := dir; ; d = filepath.Dir(d) {
			if !yield(d) || d == root || filepath.Dir(d) == d {
				return
			}
		}
	}
}

// present says whether path exists. Under a root, a path that is a link
// leading out of it is an error, not a file: its content is the runner's,
// not the repository's. A link to nothing counts as absent, as before.
func present(root, path string) (bool, error) {
	if _, err := os.Stat(path); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return false, nil
		}
		return false, fmt.Errorf("%s: %w", path, err)
	}
	if root == "" {
		return true, nil
	}
	if _, err := confine.Resolve(root, "", path); err != nil {
		if errors.Is(err, confine.ErrOutside) {
			return false, fmt.Errorf("%s is a link to a file outside the checkout: refused", path)
		}
		return false, fmt.Errorf("%s: %w", path, err)
	}
	return true, nil
}

// Input is what a stack's Spec comes from.
type Input int

const (
	// SpecInput: a ready spec.yaml.
	SpecInput Input = iota + 1
	// AppInput: main.yaml, AppConfigurations to generate from.
	AppInput
	// KCLInput: main.k, compiled to AppConfigurations to generate from.
	KCLInput
)

// Input says whether the stack holds a ready Spec, AppConfigurations in
// YAML or in KCL. A ready spec.yaml is used as it is even with main.k beside
// it (the Spec `kusion generate` wrote from it, committed); main.yaml and
// main.k together, or spec.yaml and main.yaml, are refused (which one
// counts would be a guess), as is a folder with none.
func (s *Stack) Input() (Input, error) {
	var errs []error
	has := func(name string) bool {
		ok, err := present(s.Root, filepath.Join(s.Path, name))
		errs = append(errs, err)
		return ok
	}
	spec, app, kcl := has(SpecFile), has(AppFile), has(KCLFile)
	if err := errors.Join(errs...); err != nil {
		return 0, fmt.Errorf("stack %s: %w", s.Name, err)
	}
	switch {
	case spec && app:
		return 0, fmt.Errorf("stack %s: both %s and %s in %s: keep the AppConfigurations (%s) or the ready Spec (%s), not both",
			s.Name, SpecFile, AppFile, s.Path, AppFile, SpecFile)
	case spec:
		return SpecInput, nil
	case app && kcl:
		return 0, fmt.Errorf("stack %s: both %s and %s in %s: keep the AppConfigurations in KCL (%s) or in YAML (%s), not both",
			s.Name, KCLFile, AppFile, s.Path, KCLFile, AppFile)
	case app:
		return AppInput, nil
	case kcl:
		return KCLInput, nil
	}
	return 0, fmt.Errorf("stack %s: no %s, %s or %s in %s", s.Name, SpecFile, KCLFile, AppFile, s.Path)
}

// Spec reads and validates the stack's ready spec.
func (s *Stack) Spec() (*model.Spec, error) {
	path := filepath.Join(s.Path, SpecFile)
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("stack %s: no %s in %s", s.Name, SpecFile, s.Path)
	}
	return spec.Load(path)
}

func readYAML(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	if err := yaml.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}
