// Package project finds a Kusion project and its stacks on disk: a project
// folder holds project.yaml; each stack folder below it holds stack.yaml and
// either a ready spec.yaml (as `kusion generate` writes it) or main.yaml,
// the stack's AppConfigurations, which engine/generate turns into a Spec
// with a workspace (workspaces/<name>.yaml in the project or a folder above).
package project

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"sigs.k8s.io/yaml"

	"github.com/kusionpr/kusionpr/engine/spec"
	"github.com/kusionpr/kusionpr/model"
)

const (
	ProjectFile = "project.yaml"
	StackFile   = "stack.yaml"
	SpecFile    = "spec.yaml"
	// AppFile holds a stack's AppConfigurations in YAML: what Kusion's
	// main.k compiles to.
	AppFile = "main.yaml"
	// kclFile is Kusion's own input, which needs the KCL compiler.
	kclFile = "main.k"
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
	Path    string   `json:"-"`
	Project *Project `json:"-"`
}

// LoadStack reads the stack in dir and the project above it.
func LoadStack(dir string) (*Stack, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("stack %s: %w", dir, err)
	}
	var st Stack
	if err := readYAML(filepath.Join(abs, StackFile), &st); err != nil {
		return nil, err
	}
	if st.Name == "" {
		st.Name = filepath.Base(abs)
	}
	st.Path = abs
	p, err := FindProject(abs)
	if err != nil {
		return nil, fmt.Errorf("stack %s: %w", dir, err)
	}
	st.Project = p
	return &st, nil
}

// DeletedStack stands for a stack whose folder a change removed: named after
// its folder (its stack.yaml is gone), in the project above it, so what its
// releases hold can still be previewed for destruction and destroyed.
func DeletedStack(dir string) (*Stack, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("stack %s: %w", dir, err)
	}
	p, err := FindProject(filepath.Dir(abs))
	if err != nil {
		return nil, fmt.Errorf("deleted stack %s: %w", dir, err)
	}
	return &Stack{Name: filepath.Base(abs), Path: abs, Project: p}, nil
}

// FindProject reads the nearest project.yaml at or above dir.
func FindProject(dir string) (*Project, error) {
	for d := dir; ; d = filepath.Dir(d) {
		path := filepath.Join(d, ProjectFile)
		if _, err := os.Stat(path); err == nil {
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
		if parent := filepath.Dir(d); parent == d {
			return nil, fmt.Errorf("no %s in %s or any folder above it", ProjectFile, dir)
		}
	}
}

// Input is what a stack's Spec comes from.
type Input int

const (
	// SpecInput: a ready spec.yaml.
	SpecInput Input = iota + 1
	// AppInput: main.yaml, AppConfigurations to generate from.
	AppInput
)

// Input says whether the stack holds a ready Spec or AppConfigurations,
// and refuses a folder holding both (which one counts would be a guess) or
// neither.
func (s *Stack) Input() (Input, error) {
	has := func(name string) bool {
		_, err := os.Stat(filepath.Join(s.Path, name))
		return err == nil
	}
	switch spec, app := has(SpecFile), has(AppFile); {
	case spec && app:
		return 0, fmt.Errorf("stack %s: both %s and %s in %s: keep the AppConfigurations (%s) or the ready Spec (%s), not both",
			s.Name, SpecFile, AppFile, s.Path, AppFile, SpecFile)
	case spec:
		return SpecInput, nil
	case app:
		return AppInput, nil
	case has(kclFile):
		return 0, fmt.Errorf("stack %s: %s needs the KCL compiler, which is not available here: write the AppConfigurations as YAML in %s, or commit the Spec `kusion generate` writes as %s",
			s.Name, kclFile, AppFile, SpecFile)
	}
	return 0, fmt.Errorf("stack %s: no %s or %s in %s", s.Name, SpecFile, AppFile, s.Path)
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
