package deps

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"

	"github.com/go-git/go-git/v5/plumbing"
	gitcache "github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/capability"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/sideband"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"github.com/go-git/go-git/v5/storage/filesystem"

	"github.com/go-git/go-billy/v5/osfs"
)

// Git dependencies are fetched over git's smart HTTP protocol by go-git,
// in this process, through the same checked client as OCI (the address
// checked when connecting, no proxy, no redirect followed): no git binary
// is needed (the image has none), and none of the host's or user's git
// configuration (credential helpers, URL rewrites, proxies) can apply to a
// fetch a pull request asked for. The pack is written to disk within the
// package's byte limit and the commit's tree goes through the same
// bounded, checked extraction as an OCI layer.

// gitClient is the checked client, refusing redirects (git's own default
// for a fetch a pull request names: the allowlist checked the URL, not
// where it may send us) and bounding what the responses carry together.
// go-git reports errors as text, so the bound is read back from it.
func gitClient(base *http.Client, bound *boundedTransport) *http.Client {
	bound.next = base.Transport
	return &http.Client{
		Transport: bound,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			return fmt.Errorf("%s redirects to %s: a git dependency's server must answer itself", via[0].URL.Host, req.URL.Redacted())
		},
	}
}

// boundedTransport fails the response bodies past max bytes, together,
// with a LimitError, which it keeps.
type boundedTransport struct {
	next    http.RoundTripper
	max     int64
	mu      sync.Mutex
	read    int64
	tripped *LimitError
}

func (t *boundedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	resp.Body = &boundedBody{ReadCloser: resp.Body, t: t}
	return resp, nil
}

// exceeded is the LimitError if the bound was met.
func (t *boundedTransport) exceeded() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.tripped == nil {
		return nil
	}
	return t.tripped
}

type boundedBody struct {
	io.ReadCloser
	t *boundedTransport
}

func (b *boundedBody) Read(p []byte) (int, error) {
	t := b.t
	t.mu.Lock()
	left := t.max - t.read
	if left <= 0 {
		t.tripped = &LimitError{Limit: LimitBytes, Max: fmt.Sprint(t.max)}
		t.mu.Unlock()
		return 0, t.tripped
	}
	t.mu.Unlock()
	if int64(len(p)) > left {
		p = p[:left]
	}
	n, err := b.ReadCloser.Read(p)
	t.mu.Lock()
	t.read += int64(n)
	t.mu.Unlock()
	return n, err
}

// fetchGit fetches the commit a reference names (a tag, a commit id, a
// branch, or the default branch) from the repository at loc into dir (its
// files only) and returns the commit id. The pack is kept as it came, in
// the folder objects (a blob is only inflated as it is extracted, within
// the limits: a small pack of a huge file costs no memory).
func fetchGit(ctx context.Context, client *http.Client, loc location, tag, commit, branch string, lim Limits, objects, dir string) (string, error) {
	scheme := "https"
	if loc.plain {
		scheme = "http"
	}
	url := scheme + "://" + loc.String()
	ep, err := transport.NewEndpoint(url)
	if err != nil {
		return "", fmt.Errorf("the repository's URL %s: %w", url, err)
	}
	bound := &boundedTransport{max: lim.MaxBytes}
	id, err := fetchCommit(ctx, gitClient(client, bound), url, ep, tag, commit, branch, lim, objects, dir)
	if lerr := bound.exceeded(); err != nil && lerr != nil {
		return "", lerr
	}
	return id, err
}

func fetchCommit(ctx context.Context, client *http.Client, url string, ep *transport.Endpoint, tag, commit, branch string, lim Limits, objects, dir string) (string, error) {
	sess, err := githttp.NewClient(client).NewUploadPackSession(ep, nil)
	if err != nil {
		return "", fmt.Errorf("opening %s: %w", url, err)
	}
	defer sess.Close()
	adv, err := sess.AdvertisedReferencesContext(ctx)
	if err != nil {
		return "", fmt.Errorf("listing the references of %s: %w", url, err)
	}
	want, err := wanted(adv, tag, commit, branch)
	if err != nil {
		return "", fmt.Errorf("%s: %w", url, err)
	}
	st := filesystem.NewStorage(osfs.New(objects), gitcache.NewObjectLRUDefault())
	if err := fetchPack(ctx, sess, adv, []plumbing.Hash{want}, true, st); err != nil {
		if commit == "" {
			return "", fmt.Errorf("fetching %s from %s: %w", want, url, err)
		}
		// A server that does not serve unadvertised commits by id: fetch
		// what it advertises and look for the commit there.
		if err2 := fetchPack(ctx, sess, adv, advertised(adv), false, st); err2 != nil {
			return "", fmt.Errorf("fetching commit %s from %s: %w", commit, url, errors.Join(err, err2))
		}
	}
	c, err := object.GetCommit(st, want)
	if err != nil {
		return "", fmt.Errorf("%s did not send commit %s: %w", url, want, err)
	}
	tree, err := c.Tree()
	if err != nil {
		return "", fmt.Errorf("reading the tree of commit %s of %s: %w", want, url, err)
	}
	// The tree is written as a tar, which extract checks and bounds like
	// an OCI layer.
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(treeTar(st, tree, pw)) }()
	xerr := extract(pr, dir, lim)
	pr.CloseWithError(errors.New("extraction ended"))
	if xerr != nil {
		return "", xerr
	}
	return want.String(), nil
}

// wanted is the commit a reference names among the advertised ones.
func wanted(adv *packp.AdvRefs, tag, commit, branch string) (plumbing.Hash, error) {
	if commit != "" {
		if !plumbing.IsHash(commit) {
			return plumbing.ZeroHash, fmt.Errorf("commit %q is not a full commit id", commit)
		}
		return plumbing.NewHash(commit), nil
	}
	var name string
	switch {
	case tag != "":
		name = "refs/tags/" + tag
		// An annotated tag is advertised with the commit it peels to.
		if h, ok := adv.Peeled[name]; ok {
			return h, nil
		}
	case branch != "":
		name = "refs/heads/" + branch
	default:
		if adv.Head == nil {
			return plumbing.ZeroHash, errors.New("no default branch is advertised")
		}
		return *adv.Head, nil
	}
	h, ok := adv.References[name]
	if !ok {
		return plumbing.ZeroHash, fmt.Errorf("no %s", name)
	}
	return h, nil
}

// advertised is every advertised branch's and tag's commit.
func advertised(adv *packp.AdvRefs) []plumbing.Hash {
	var out []plumbing.Hash
	for name, h := range adv.References {
		if p, ok := adv.Peeled[name]; ok {
			h = p
		}
		out = append(out, h)
	}
	return out
}

// fetchPack asks for wants (the commit alone when shallow) and stores the
// pack's objects in st.
func fetchPack(ctx context.Context, sess transport.UploadPackSession, adv *packp.AdvRefs, wants []plumbing.Hash, shallow bool, st storer.Storer) error {
	req := packp.NewUploadPackRequestFromCapabilities(adv.Capabilities)
	req.Wants = wants
	if shallow && adv.Capabilities.Supports(capability.Shallow) {
		req.Depth = packp.DepthCommits(1)
		if err := req.Capabilities.Set(capability.Shallow); err != nil {
			return err
		}
	}
	resp, err := sess.UploadPack(ctx, req)
	if err != nil {
		return err
	}
	defer resp.Close()
	var r io.Reader = resp
	switch {
	case req.Capabilities.Supports(capability.Sideband64k):
		r = sideband.NewDemuxer(sideband.Sideband64k, resp)
	case req.Capabilities.Supports(capability.Sideband):
		r = sideband.NewDemuxer(sideband.Sideband, resp)
	}
	return packfile.UpdateObjectStorage(st, r)
}

// treeTar writes the tree's files and links as a tar stream; a submodule
// (a commit in the tree) is left out, as git archive does.
func treeTar(st storer.EncodedObjectStorer, tree *object.Tree, w io.Writer) error {
	tw := tar.NewWriter(w)
	walker := object.NewTreeWalker(tree, true, nil)
	defer walker.Close()
	for {
		name, e, err := walker.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("walking the tree: %w", err)
		}
		switch e.Mode {
		case filemode.Dir:
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: 0o755}); err != nil {
				return err
			}
		case filemode.Regular, filemode.Deprecated, filemode.Executable, filemode.Symlink:
			blob, err := object.GetBlob(st, e.Hash)
			if err != nil {
				return fmt.Errorf("reading %s: %w", name, err)
			}
			rd, err := blob.Reader()
			if err != nil {
				return fmt.Errorf("reading %s: %w", name, err)
			}
			err = writeTarEntry(tw, name, e.Mode, blob.Size, rd)
			rd.Close()
			if err != nil {
				return err
			}
		}
	}
	return tw.Close()
}

func writeTarEntry(tw *tar.Writer, name string, mode filemode.FileMode, size int64, rd io.Reader) error {
	if mode == filemode.Symlink {
		target, err := io.ReadAll(io.LimitReader(rd, 4096))
		if err != nil {
			return fmt.Errorf("reading the link %s: %w", name, err)
		}
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: name, Linkname: string(target), Mode: 0o777})
	}
	perm := int64(0o644)
	if mode == filemode.Executable {
		perm = 0o755
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Size: size, Mode: perm}); err != nil {
		return err
	}
	if _, err := io.Copy(tw, rd); err != nil {
		return fmt.Errorf("writing %s: %w", name, err)
	}
	return nil
}
