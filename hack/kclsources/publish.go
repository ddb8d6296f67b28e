package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/content/memory"
	"oras.land/oras-go/v2/registry/remote"

	"github.com/kusionpr/kusionpr/engine/kcl/deps"
	"github.com/kusionpr/kusionpr/engine/kcl/kclmod"
)

// ociPackage is a package pushed to the registry: the folder, the
// repository and tag, and the layer type (kpm pushed tar layers until it
// moved to tar+gzip; Kusion's catalog on ghcr.io was pushed with tar).
type ociPackage struct {
	dir, repo, tag, mediaType string
}

// gitPackage is a package made into a repository with a tag.
type gitPackage struct {
	dir, repo, tag string
}

func publish(ctx context.Context, log *slog.Logger, registry, gitRoot, pkgs string) error {
	for _, p := range []ociPackage{
		{"service", "kusionstack/service", "0.1.0", deps.MediaTypeKCLTar},
		{"network", "kusionstack/network", "0.2.0", deps.MediaTypeKCLTar},
		{"mysql", "kusionstack/mysql", "0.2.0", deps.MediaTypeKCLTarGz},
	} {
		d, err := pushOCI(ctx, registry, filepath.Join(pkgs, p.dir), p)
		if err != nil {
			return err
		}
		log.Info("pushed", "ref", registry+"/"+p.repo+":"+p.tag, "digest", d)
	}
	for _, p := range []gitPackage{{"kam", "KusionStack/kam.git", "0.2.0"}} {
		c, err := makeRepo(ctx, filepath.Join(pkgs, p.dir), filepath.Join(gitRoot, p.repo), p.tag)
		if err != nil {
			return err
		}
		log.Info("made repository", "repo", p.repo, "tag", p.tag, "commit", c)
	}
	return nil
}

// packageTar is the folder as a tar, entries sorted, times zero, as kpm
// packs a package (its pkg/utils TarDir: paths relative to the folder).
func packageTar(dir string) ([]byte, error) {
	var paths []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != dir {
			paths = append(paths, p)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", dir, err)
	}
	sort.Strings(paths)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, p := range paths {
		fi, err := os.Lstat(p)
		if err != nil {
			return nil, err
		}
		rel, _ := filepath.Rel(dir, p)
		h, err := tar.FileInfoHeader(fi, "")
		if err != nil {
			return nil, err
		}
		h.Name = filepath.ToSlash(rel)
		if fi.IsDir() {
			h.Name += "/"
		}
		h.ModTime, h.Uid, h.Gid, h.Uname, h.Gname = time.Unix(0, 0), 0, 0, "", ""
		h.Format = tar.FormatPAX
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if fi.Mode().IsRegular() {
			data, err := os.ReadFile(p)
			if err != nil {
				return nil, err
			}
			if _, err := tw.Write(data); err != nil {
				return nil, err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// pushOCI pushes the package as kpm does (pkg/oci/oci.go
// PushWithOciManifest): one layer titled <name>_<version>.tar (or .tgz),
// the layer type as the artifact type, and kpm's annotations
// org.kcllang.package.{name,version,description,sum}.
func pushOCI(ctx context.Context, registry, dir string, p ociPackage) (string, error) {
	mod, err := kclmod.Load(dir, dir)
	if err != nil {
		return "", err
	}
	sum, err := deps.HashDir(dir)
	if err != nil {
		return "", err
	}
	blob, err := packageTar(dir)
	if err != nil {
		return "", fmt.Errorf("packing %s: %w", dir, err)
	}
	title := mod.Package.Name + "_" + mod.Package.Version + ".tar"
	if p.mediaType == deps.MediaTypeKCLTarGz {
		var z bytes.Buffer
		zw := gzip.NewWriter(&z)
		zw.ModTime = time.Unix(0, 0)
		zw.Write(blob)
		zw.Close()
		blob = z.Bytes()
		title = strings.TrimSuffix(title, ".tar") + ".tgz"
	}
	store := memory.New()
	layer := content.NewDescriptorFromBytes(p.mediaType, blob)
	layer.Annotations = map[string]string{ocispec.AnnotationTitle: title}
	if err := store.Push(ctx, layer, bytes.NewReader(blob)); err != nil {
		return "", fmt.Errorf("staging the layer of %s: %w", dir, err)
	}
	desc, err := oras.PackManifest(ctx, store, oras.PackManifestVersion1_1, p.mediaType, oras.PackManifestOptions{
		Layers: []ocispec.Descriptor{layer},
		ManifestAnnotations: map[string]string{
			"org.kcllang.package.name":        mod.Package.Name,
			"org.kcllang.package.version":     mod.Package.Version,
			"org.kcllang.package.description": mod.Package.Description,
			"org.kcllang.package.sum":         sum,
			ocispec.AnnotationCreated:         "1970-01-01T00:00:00Z",
		},
	})
	if err != nil {
		return "", fmt.Errorf("packing the manifest of %s: %w", dir, err)
	}
	if err := store.Tag(ctx, desc, p.tag); err != nil {
		return "", err
	}
	repo, err := remote.NewRepository(registry + "/" + p.repo)
	if err != nil {
		return "", err
	}
	repo.PlainHTTP = true
	if _, err := oras.Copy(ctx, store, p.tag, repo, p.tag, oras.DefaultCopyOptions); err != nil {
		return "", fmt.Errorf("pushing %s to %s/%s:%s: %w", dir, registry, p.repo, p.tag, err)
	}
	return desc.Digest.String(), nil
}

// makeRepo makes a bare repository at bare holding dir's files in one
// commit, tagged (an annotated tag, as releases are). Author, committer and
// dates are fixed, so the commit id is the same at every start.
func makeRepo(ctx context.Context, dir, bare, tag string) (string, error) {
	work, err := os.MkdirTemp("", "kclsources-*")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(work)
	env := append(os.Environ(),
		"GIT_CONFIG_NOSYSTEM=1", "HOME="+work,
		"GIT_AUTHOR_NAME=kusionpr", "GIT_AUTHOR_EMAIL=testenv@kusionpr.invalid", "GIT_AUTHOR_DATE=2024-01-01T00:00:00Z",
		"GIT_COMMITTER_NAME=kusionpr", "GIT_COMMITTER_EMAIL=testenv@kusionpr.invalid", "GIT_COMMITTER_DATE=2024-01-01T00:00:00Z")
	git := func(dir string, args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, "git", args...)
		cmd.Dir, cmd.Env = dir, env
		out, err := cmd.CombinedOutput()
		if err != nil {
			return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out)), nil
	}
	tree := filepath.Join(work, "tree")
	if err := os.CopyFS(tree, os.DirFS(dir)); err != nil {
		return "", fmt.Errorf("copying %s: %w", dir, err)
	}
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"},
		{"add", "-A"},
		{"commit", "-q", "-m", "kam " + tag},
		{"tag", "-a", "-m", "kam " + tag, tag},
	} {
		if _, err := git(tree, args...); err != nil {
			return "", err
		}
	}
	if err := os.RemoveAll(bare); err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(bare), 0o755); err != nil {
		return "", err
	}
	if _, err := git(work, "clone", "-q", "--bare", tree, bare); err != nil {
		return "", err
	}
	return git(bare, "rev-parse", tag+"^{commit}")
}
