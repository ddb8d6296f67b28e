package deps

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"
)

// The layer media types kpm pushes a package as: a tar before kpm's
// change to compressed layers (what Kusion's catalog on ghcr.io holds),
// a gzip-compressed tar after (kpm's pkg/oci/oci.go
// DEFAULT_OCI_ARTIFACT_TYPE).
const (
	MediaTypeKCLTar   = "application/vnd.oci.image.layer.v1.tar"
	MediaTypeKCLTarGz = "application/vnd.oci.image.layer.v1.tar+gzip"
)

// maxManifestBytes bounds a manifest read: a KCL package's has one layer.
const maxManifestBytes = 4 << 20

// fetchOCI pulls the package at loc (a registry host and repository) and
// reference into dir, and returns the manifest digest.
func fetchOCI(ctx context.Context, client *http.Client, loc location, reference string, lim Limits, dir string) (string, error) {
	repo, err := remote.NewRepository(loc.hostport() + "/" + loc.path)
	if err != nil {
		return "", fmt.Errorf("naming the repository %s: %w", loc, err)
	}
	repo.PlainHTTP = loc.plain
	repo.Client = &auth.Client{Client: client, Cache: auth.NewCache(), Header: http.Header{"User-Agent": {"kusionpr"}}}
	repo.ManifestMediaTypes = []string{ocispec.MediaTypeImageManifest}

	desc, err := repo.Resolve(ctx, reference)
	if err != nil {
		return "", fmt.Errorf("resolving %s:%s: %w", loc, reference, err)
	}
	if desc.MediaType != ocispec.MediaTypeImageManifest {
		return "", fmt.Errorf("%s:%s is a %s, not an OCI image manifest as kpm pushes", loc, reference, desc.MediaType)
	}
	if desc.Size > maxManifestBytes {
		return "", fmt.Errorf("the manifest of %s:%s is %d bytes, more than %d", loc, reference, desc.Size, maxManifestBytes)
	}
	rc, err := repo.Fetch(ctx, desc)
	if err != nil {
		return "", fmt.Errorf("fetching the manifest of %s:%s: %w", loc, reference, err)
	}
	data, err := content.ReadAll(rc, desc)
	rc.Close()
	if err != nil {
		return "", fmt.Errorf("reading the manifest of %s:%s: %w", loc, reference, err)
	}
	var m ocispec.Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return "", fmt.Errorf("decoding the manifest of %s:%s: %w", loc, reference, err)
	}
	var layer *ocispec.Descriptor
	for i, l := range m.Layers {
		if l.MediaType == MediaTypeKCLTar || l.MediaType == MediaTypeKCLTarGz {
			if layer != nil {
				return "", fmt.Errorf("%s:%s has more than one package layer", loc, reference)
			}
			layer = &m.Layers[i]
		}
	}
	if layer == nil {
		return "", fmt.Errorf("%s:%s has no layer of type %s or %s: it is not a KCL package", loc, reference, MediaTypeKCLTar, MediaTypeKCLTarGz)
	}
	if layer.Size > lim.MaxBytes {
		return "", &LimitError{Limit: LimitBytes, Max: fmt.Sprint(lim.MaxBytes)}
	}
	lr, err := repo.Blobs().Fetch(ctx, *layer)
	if err != nil {
		return "", fmt.Errorf("fetching the package layer of %s:%s: %w", loc, reference, err)
	}
	defer lr.Close()
	vr := content.NewVerifyReader(lr, *layer)
	if err := extract(vr, dir, lim); err != nil {
		return "", err
	}
	// The tar's end may come before the layer's: the rest is read so the
	// digest covers all of it.
	if _, err := io.Copy(io.Discard, vr); err != nil {
		return "", fmt.Errorf("reading the package layer of %s:%s: %w", loc, reference, err)
	}
	if err := vr.Verify(); err != nil {
		return "", fmt.Errorf("verifying the package layer of %s:%s: %w", loc, reference, err)
	}
	return desc.Digest.String(), nil
}
