package kclmod

import (
	"errors"
	"io/fs"
	"path/filepath"

	"github.com/pelletier/go-toml/v2"
)

// Lock is a parsed kcl.mod.lock.
type Lock struct {
	File         string
	Dependencies map[string]LockEntry
}

// LockEntry is one [dependencies.<name>] table of kcl.mod.lock, with the
// keys kpm writes (kpm's pkg/package/modfile.go Dependency and
// pkg/downloader/source.go Git and Oci).
type LockEntry struct {
	Name     string `toml:"name"`
	FullName string `toml:"full_name"`
	Version  string `toml:"version"`
	// Sum is kpm's checksum of the package's files (see deps.HashDir).
	Sum    string `toml:"sum"`
	URL    string `toml:"url"`
	GitTag string `toml:"git_tag"`
	Commit string `toml:"commit"`
	Branch string `toml:"branch"`
	Reg    string `toml:"reg"`
	Repo   string `toml:"repo"`
	OCITag string `toml:"oci_tag"`
}

// LoadLock reads dir/kcl.mod.lock, a file of the tree root as for Load;
// a package without one has a nil Lock.
func LoadLock(root, dir string) (*Lock, error) {
	p := filepath.Join(dir, LockFile)
	data, err := readIn(root, p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return ParseLock(p, data)
}

// ParseLock reads kcl.mod.lock's content; file names it in errors.
func ParseLock(file string, data []byte) (*Lock, error) {
	var raw struct {
		Dependencies map[string]LockEntry `toml:"dependencies"`
	}
	if err := toml.Unmarshal(data, &raw); err != nil {
		return nil, tomlError(file, err)
	}
	l := &Lock{File: file, Dependencies: raw.Dependencies}
	if l.Dependencies == nil {
		l.Dependencies = map[string]LockEntry{}
	}
	return l, nil
}

// Describes says whether the lock entry records the same source and
// reference as d asks for now. An entry that does not (kcl.mod was edited
// and the lock not updated) says nothing about what d fetches.
func (e LockEntry) Describes(d Dependency) bool {
	switch d.Kind {
	case KindGit:
		return e.URL == d.Git.URL && e.GitTag == d.Git.Tag && e.Commit == d.Git.Commit && e.Branch == d.Git.Branch
	case KindOCI:
		if d.OCI.Tag == "" {
			return false
		}
		// A lock written for the short form or a host-less repo has no reg.
		reg := e.Reg
		if reg == "" {
			reg = DefaultRegistry
		}
		return reg == d.OCI.Registry && e.Repo == d.OCI.Repository && e.OCITag == d.OCI.Tag
	}
	return false
}
