// Package kclmod reads a KCL package's kcl.mod and kcl.mod.lock as KCL's
// package manager (kcl-lang/kpm) writes them: the package, its profile's
// entries, and its dependencies by kind (a local path, a git repository at a
// tag, commit or branch, an OCI artifact at a tag or digest, or the short
// form `name = "0.1.0"` that means ghcr.io/kcl-lang/name at that tag).
//
// The TOML is decoded with github.com/pelletier/go-toml/v2: it is
// maintained, implements TOML 1.0, and its decode errors carry the row and
// column, which a user editing kcl.mod needs; the error names the file.
package kclmod

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/pelletier/go-toml/v2"

	"github.com/kusionpr/kusionpr/internal/confine"
)

// The file names kpm uses.
const (
	ModFile  = "kcl.mod"
	LockFile = "kcl.mod.lock"
)

// The registry and namespace kpm resolves a dependency written as
// `name = "version"` to (kpm's settings DEFAULT_REGISTRY, DEFAULT_REPO).
const (
	DefaultRegistry  = "ghcr.io"
	DefaultNamespace = "kcl-lang"
)

// Kind is where a dependency comes from.
type Kind string

// The kinds of dependency kcl.mod can name.
const (
	KindPath Kind = "path"
	KindGit  Kind = "git"
	KindOCI  Kind = "oci"
)

// Mod is a parsed kcl.mod.
type Mod struct {
	// File is the path it was read from, for messages.
	File    string
	Package Package
	// Dependencies, sorted by name.
	Dependencies []Dependency
	// Entries are [profile] entries: the files the package compiles.
	Entries []string
}

// Package is kcl.mod's [package] table.
type Package struct {
	Name        string
	Edition     string
	Version     string
	Description string
}

// Dependency is one entry of [dependencies].
type Dependency struct {
	// Name is the key: the name the package's KCL code imports it by.
	Name string
	// Package is the dependency's own package name when kcl.mod renames it
	// (`package = "..."`), else Name.
	Package string
	Kind    Kind
	// Path is a path dependency's folder, as written (relative to kcl.mod).
	Path string
	Git  GitSource
	OCI  OCISource
	// Line is where the dependency is written in File (0 when unknown).
	Line int
}

// GitSource is a git dependency: a URL and at most one reference.
type GitSource struct {
	URL    string
	Tag    string
	Commit string
	Branch string
}

// Ref is the reference asked for, for messages and cache keys.
func (g GitSource) Ref() string {
	switch {
	case g.Commit != "":
		return "commit " + g.Commit
	case g.Tag != "":
		return "tag " + g.Tag
	case g.Branch != "":
		return "branch " + g.Branch
	}
	return "the default branch"
}

// OCISource is an OCI dependency: a repository (registry host and path)
// and a tag or digest.
type OCISource struct {
	Registry   string
	Repository string
	Tag        string
	Digest     string
}

// Reference is the artifact's reference, registry/repository:tag or @digest.
func (o OCISource) Reference() string {
	r := o.Registry + "/" + o.Repository
	if o.Digest != "" {
		return r + "@" + o.Digest
	}
	return r + ":" + o.Tag
}

// Source says where the dependency comes from, for messages.
func (d Dependency) Source() string {
	switch d.Kind {
	case KindPath:
		return "path " + d.Path
	case KindGit:
		return d.Git.URL + " (" + d.Git.Ref() + ")"
	case KindOCI:
		return "oci://" + d.OCI.Reference()
	}
	return string(d.Kind)
}

// Version is the version kpm records for the dependency in kcl.mod.lock:
// the tag, commit or branch asked for.
func (d Dependency) Version() string {
	switch d.Kind {
	case KindGit:
		for _, v := range []string{d.Git.Tag, d.Git.Commit, d.Git.Branch} {
			if v != "" {
				return v
			}
		}
	case KindOCI:
		if d.OCI.Tag != "" {
			return d.OCI.Tag
		}
		return d.OCI.Digest
	}
	return ""
}

// Error is a problem in kcl.mod or kcl.mod.lock, naming the file and, where
// known, the line and the dependency.
type Error struct {
	File       string
	Line       int
	Column     int
	Dependency string
	Err        error
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
		if e.Column > 0 {
			fmt.Fprintf(&b, ":%d", e.Column)
		}
	}
	if e.Dependency != "" {
		fmt.Fprintf(&b, ": dependency %q", e.Dependency)
	}
	b.WriteString(": ")
	b.WriteString(e.Err.Error())
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// Load reads dir's kcl.mod. root is the tree it belongs to (a checkout,
// a fetched package): a kcl.mod that is a link leading out of it is
// refused unread, as the repository's link may point at any file of the
// machine's.
func Load(root, dir string) (*Mod, error) {
	p := filepath.Join(dir, ModFile)
	data, err := readIn(root, p)
	if err != nil {
		return nil, err
	}
	return Parse(p, data)
}

// readIn reads path, a file of the tree root, unless following its links
// leaves root.
func readIn(root, path string) ([]byte, error) {
	real, err := confine.Resolve(root, "", path)
	if errors.Is(err, confine.ErrOutside) {
		return nil, fmt.Errorf("reading %s: it is a link to a file outside %s: refused", path, root)
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	data, err := os.ReadFile(real)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	return data, nil
}

type rawMod struct {
	Package struct {
		Name        string `toml:"name"`
		Edition     string `toml:"edition"`
		Version     string `toml:"version"`
		Description string `toml:"description"`
	} `toml:"package"`
	Dependencies map[string]any `toml:"dependencies"`
	Profile      struct {
		Entries []string `toml:"entries"`
	} `toml:"profile"`
}

// Parse reads kcl.mod's content; file names it in errors.
func Parse(file string, data []byte) (*Mod, error) {
	var raw rawMod
	if err := toml.Unmarshal(data, &raw); err != nil {
		return nil, tomlError(file, err)
	}
	m := &Mod{
		File: file,
		Package: Package{
			Name:        raw.Package.Name,
			Edition:     raw.Package.Edition,
			Version:     raw.Package.Version,
			Description: raw.Package.Description,
		},
		Entries: raw.Profile.Entries,
	}
	names := make([]string, 0, len(raw.Dependencies))
	for n := range raw.Dependencies {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		d, err := parseDependency(n, raw.Dependencies[n])
		line := dependencyLine(data, n)
		if err != nil {
			return nil, &Error{File: file, Line: line, Dependency: n, Err: err}
		}
		d.Line = line
		m.Dependencies = append(m.Dependencies, d)
	}
	return m, nil
}

func tomlError(file string, err error) error {
	var de *toml.DecodeError
	if errors.As(err, &de) {
		row, col := de.Position()
		return &Error{File: file, Line: row, Column: col, Err: err}
	}
	return &Error{File: file, Err: err}
}

// The keys kpm reads in a dependency's table. Any other is refused: a key
// this reader does not know could change what kpm fetches, and fetching
// something else than the compiler's user meant is worse than stopping.
func knownKey(k string) bool {
	switch k {
	case "path", "git", "oci", "repo", "reg", "tag", "commit", "branch", "digest", "version", "package":
		return true
	}
	return false
}

var (
	namePattern   = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.-]*$`)
	commitPattern = regexp.MustCompile(`^([0-9a-f]{40}|[0-9a-f]{64})$`)
	digestPattern = regexp.MustCompile(`^sha256:[0-9a-f]{64}$|^sha512:[0-9a-f]{128}$`)
	refPattern    = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.+/-]{0,254}$`)
)

func parseDependency(name string, v any) (Dependency, error) {
	d := Dependency{Name: name, Package: name}
	if !namePattern.MatchString(name) {
		return d, errors.New("the name is not a KCL package name")
	}
	switch t := v.(type) {
	case string:
		// `name = "0.1.0"`: kpm's default registry and namespace.
		if !refPattern.MatchString(t) {
			return d, fmt.Errorf("version %q is not a valid tag", t)
		}
		d.Kind = KindOCI
		d.OCI = OCISource{Registry: DefaultRegistry, Repository: DefaultNamespace + "/" + name, Tag: t}
		return d, nil
	case map[string]any:
		return parseTable(d, t)
	default:
		return d, fmt.Errorf("expected a version string or a table, got %T", v)
	}
}

func parseTable(d Dependency, t map[string]any) (Dependency, error) {
	s := map[string]string{}
	keys := make([]string, 0, len(t))
	for k := range t {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !knownKey(k) {
			return d, fmt.Errorf("unknown key %q", k)
		}
		str, ok := t[k].(string)
		if !ok {
			return d, fmt.Errorf("key %q: expected a string, got %T", k, t[k])
		}
		s[k] = str
	}
	if p := s["package"]; p != "" {
		if !namePattern.MatchString(p) {
			return d, fmt.Errorf("package %q is not a KCL package name", p)
		}
		d.Package = p
	}
	var kinds []string
	for _, k := range []string{"path", "git", "oci", "repo"} {
		if _, ok := s[k]; ok {
			kinds = append(kinds, k)
		}
	}
	if len(kinds) != 1 {
		return d, fmt.Errorf("expected exactly one of path, git, oci or repo, got %d (%s)", len(kinds), strings.Join(kinds, ", "))
	}
	refs := func(allowed ...string) ([]string, error) {
		var got []string
		for _, k := range []string{"tag", "commit", "branch", "digest"} {
			if _, ok := s[k]; !ok {
				continue
			}
			if !contains(allowed, k) {
				return nil, fmt.Errorf("%q does not apply to a %s dependency", k, kinds[0])
			}
			got = append(got, k)
		}
		if len(got) > 1 {
			return nil, fmt.Errorf("expected at most one of %s, got %s", strings.Join(allowed, ", "), strings.Join(got, " and "))
		}
		return got, nil
	}
	switch kinds[0] {
	case "path":
		if _, err := refs(); err != nil {
			return d, err
		}
		if s["path"] == "" {
			return d, errors.New("path is empty")
		}
		d.Kind, d.Path = KindPath, s["path"]
	case "git":
		if _, err := refs("tag", "commit", "branch"); err != nil {
			return d, err
		}
		if s["git"] == "" {
			return d, errors.New("git URL is empty")
		}
		d.Kind = KindGit
		d.Git = GitSource{URL: s["git"], Tag: s["tag"], Commit: s["commit"], Branch: s["branch"]}
		if d.Git.Commit != "" && !commitPattern.MatchString(d.Git.Commit) {
			// A fetch names a commit in full: a prefix could match another one.
			return d, fmt.Errorf("commit %q is not a full hexadecimal object name", d.Git.Commit)
		}
		for _, r := range []string{d.Git.Tag, d.Git.Branch} {
			if r != "" && (!refPattern.MatchString(r) || strings.Contains(r, "..")) {
				return d, fmt.Errorf("reference %q is not a valid git tag or branch name", r)
			}
		}
	case "oci", "repo":
		got, err := refs("tag", "digest")
		if err != nil {
			return d, err
		}
		if len(got) == 0 {
			// kpm would look up the newest tag; a build that changes when
			// someone pushes is not what a reviewed pull request should run.
			return d, errors.New("an OCI dependency needs a tag or a digest")
		}
		o := OCISource{Tag: s["tag"], Digest: s["digest"]}
		if kinds[0] == "oci" {
			reg, repo, err := splitOCIURL(s["oci"])
			if err != nil {
				return d, err
			}
			o.Registry, o.Repository = reg, repo
		} else {
			o.Registry, o.Repository = s["reg"], strings.Trim(s["repo"], "/")
			if o.Registry == "" {
				o.Registry = DefaultRegistry
			}
			if o.Repository == "" {
				return d, errors.New("repo is empty")
			}
		}
		if o.Tag != "" && !refPattern.MatchString(o.Tag) {
			return d, fmt.Errorf("tag %q is not a valid OCI tag", o.Tag)
		}
		if o.Digest != "" && !digestPattern.MatchString(o.Digest) {
			return d, fmt.Errorf("digest %q is not a sha256 or sha512 digest", o.Digest)
		}
		d.Kind, d.OCI = KindOCI, o
	}
	if _, ok := s["reg"]; ok && kinds[0] != "repo" {
		return d, fmt.Errorf("\"reg\" applies only with \"repo\"")
	}
	return d, nil
}

// splitOCIURL splits oci://host[:port]/repository.
func splitOCIURL(u string) (string, string, error) {
	rest, ok := strings.CutPrefix(u, "oci://")
	if !ok {
		return "", "", fmt.Errorf("oci URL %q does not start with oci://", u)
	}
	host, repo, ok := strings.Cut(rest, "/")
	repo = strings.Trim(repo, "/")
	if !ok || host == "" || repo == "" {
		return "", "", fmt.Errorf("oci URL %q names no registry and repository", u)
	}
	if strings.ContainsAny(rest, "?#@ ") || strings.Contains(repo, "..") {
		return "", "", fmt.Errorf("oci URL %q is not a registry and repository path", u)
	}
	return host, repo, nil
}

func contains(list []string, s string) bool {
	for _, l := range list {
		if l == s {
			return true
		}
	}
	return false
}

// dependencyLine finds where name is written under [dependencies], as
// `name = ...` (bare or quoted) or a [dependencies.name] table; 0 when not
// found. The TOML library reports positions only for syntax errors, and a
// message that names the line is what a user fixing kcl.mod wants.
func dependencyLine(data []byte, name string) int {
	in := false
	for i, line := range bytes.Split(data, []byte("\n")) {
		l := strings.TrimSpace(string(line))
		if strings.HasPrefix(l, "[") {
			h := strings.Trim(l, "[] \t")
			h = strings.ReplaceAll(h, " ", "")
			if h == "dependencies."+name || h == `dependencies."`+name+`"` {
				return i + 1
			}
			in = h == "dependencies"
			continue
		}
		if !in {
			continue
		}
		key, _, ok := strings.Cut(l, "=")
		if !ok {
			continue
		}
		key = strings.Trim(strings.TrimSpace(key), `"'`)
		if key == name {
			return i + 1
		}
	}
	return 0
}
