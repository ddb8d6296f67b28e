package githubfake

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/rand"
	"crypto/sha1"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"
)

// codeloadPrefix is where the fake serves the archives the tarball
// operation redirects to: codeload.github.com on GitHub, outside the REST
// description, and so exempt from its checks.
const codeloadPrefix = "/_codeload/"

type tree struct {
	owner, name, ref, sha string
	tgz                   []byte
}

var fullSHA = regexp.MustCompile(`^[0-9a-f]{40}$`)

// SetTree makes the files under dir the repository's contents at ref (a
// commit sha, branch or tag; "refs/heads/x" and "x" are one ref). The
// folder is read now, as a commit does not change afterwards; a .git
// folder in it is left out, as git archive leaves it out. A ref that is
// not a full sha gets a made-up commit sha, stable for owner/repo@ref.
func (s *Server) SetTree(owner, repo, ref, dir string) {
	sha := commitSHA(owner, repo, ref)
	tgz, err := buildTarball(fmt.Sprintf("%s-%s-%s/", owner, repo, sha[:7]), sha, dir)
	if err != nil {
		panic(fmt.Sprintf("githubfake: SetTree %s/%s@%s: %v", owner, repo, ref, err))
	}
	s.setArchive(owner, repo, ref, sha, tgz)
}

// SetTarball makes tgz, as it is, the archive of the repository at ref:
// what a hostile repository's archive does to whoever downloads it (a
// gzip bomb, tens of thousands of files) without building it on disk.
func (s *Server) SetTarball(owner, repo, ref string, tgz []byte) {
	s.setArchive(owner, repo, ref, commitSHA(owner, repo, ref), tgz)
}

// commitSHA is ref if it is a full sha, else a made-up one, stable for
// owner/repo@ref.
func commitSHA(owner, repo, ref string) string {
	if fullSHA.MatchString(ref) {
		return ref
	}
	sum := sha1.Sum([]byte("githubfake\x00" + repoKey(owner, repo) + "\x00" + shortRef(ref)))
	return hex.EncodeToString(sum[:])
}

func (s *Server) setArchive(owner, repo, ref, sha string, tgz []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.st.trees[repoKey(owner, repo)+"@"+shortRef(ref)] = &tree{owner: owner, name: repo, ref: ref, sha: sha, tgz: tgz}
}

func shortRef(ref string) string {
	for _, p := range []string{"refs/heads/", "refs/tags/"} {
		if r, ok := strings.CutPrefix(ref, p); ok {
			return r
		}
	}
	return ref
}

// buildTarball builds what GitHub's legacy.tar.gz holds (git archive's output):
// a pax global header carrying the commit sha, then every folder and file
// under the one top folder.
func buildTarball(top, sha, dir string) ([]byte, error) {
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	// git archive stamps entries with the commit's time; the fake's commit
	// is made now.
	mtime := time.Now().Truncate(time.Second)
	hdr := func(name string, typ byte, mode int64) *tar.Header {
		return &tar.Header{Name: name, Typeflag: typ, Mode: mode, ModTime: mtime, Uname: "root", Gname: "root", Format: tar.FormatPAX}
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeXGlobalHeader, Name: "pax_global_header", PAXRecords: map[string]string{"comment": sha}}); err != nil {
		return nil, err
	}
	if err := tw.WriteHeader(hdr(top, tar.TypeDir, 0o775)); err != nil {
		return nil, err
	}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || path == dir {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		name := top + filepath.ToSlash(rel)
		switch {
		case d.IsDir() && d.Name() == ".git":
			return filepath.SkipDir
		case d.IsDir():
			return tw.WriteHeader(hdr(name+"/", tar.TypeDir, 0o775))
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(path)
			if err != nil {
				return err
			}
			h := hdr(name, tar.TypeSymlink, 0o777)
			h.Linkname = target
			return tw.WriteHeader(h)
		case d.Type().IsRegular():
			info, err := d.Info()
			if err != nil {
				return err
			}
			// Git keeps only the executable bit; git archive applies
			// tar.umask 002 to it.
			mode := int64(0o664)
			if info.Mode()&0o100 != 0 {
				mode = 0o775
			}
			h := hdr(name, tar.TypeReg, mode)
			h.Size = info.Size()
			if err := tw.WriteHeader(h); err != nil {
				return err
			}
			f, err := os.Open(path)
			if err != nil {
				return err
			}
			defer f.Close()
			_, err = io.Copy(tw, f)
			return err
		}
		return fmt.Errorf("%s: git keeps only files, folders and symlinks", path)
	})
	if err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := gz.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// tarball answers as GitHub does: a redirect to a short-lived codeload URL
// whose token stands for the caller's authorization, so the download
// itself needs no Authorization header.
func (s *Server) tarball(rq *request) response {
	key := rq.repo + "@" + shortRef(rq.params["ref"])
	if s.st.trees[key] == nil {
		return notFound()
	}
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	token := hex.EncodeToString(b)
	s.st.downloads[token] = key
	loc := fmt.Sprintf("%s%s%s/%s/legacy.tar.gz/%s?token=%s", strings.TrimSuffix(s.hs.URL, "/"), codeloadPrefix,
		url.PathEscape(rq.params["owner"]), url.PathEscape(rq.params["repo"]), escapeRef(rq.params["ref"]), token)
	return response{status: http.StatusFound, header: http.Header{"Location": {loc}}}
}

func escapeRef(ref string) string {
	parts := strings.Split(ref, "/")
	for i, p := range parts {
		parts[i] = url.PathEscape(p)
	}
	return strings.Join(parts, "/")
}

// serveCodeload serves an archive the tarball operation redirected to,
// under the lock. A download without the token of the redirect is a
// violation: the client dropped the query of the Location it was given.
func (s *Server) serveCodeload(w http.ResponseWriter, r *http.Request, path string) {
	where := r.Method + " " + path
	rest := strings.TrimPrefix(path, codeloadPrefix)
	parts := strings.SplitN(rest, "/", 4)
	if r.Method != http.MethodGet || len(parts) != 4 || parts[2] != "legacy.tar.gz" {
		s.violate("%s: codeload serves only GET %s{owner}/{repo}/legacy.tar.gz/{ref}", where, codeloadPrefix)
		http.NotFound(w, r)
		return
	}
	key := repoKey(parts[0], parts[1]) + "@" + shortRef(parts[3])
	token := r.URL.Query().Get("token")
	t := s.st.trees[key]
	if s.st.downloads[token] != key || t == nil {
		s.violate("%s: no archive was issued for this URL and token (follow the Location of GET /repos/{owner}/{repo}/tarball/{ref} as it is)", where)
		http.NotFound(w, r)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/x-gzip")
	h.Set("Content-Disposition", fmt.Sprintf("attachment; filename=%s-%s-%s.tar.gz", t.owner, t.name, t.sha[:7]))
	h.Set("ETag", fmt.Sprintf("%q", t.sha))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(t.tgz)
}

// content answers GET /repos/{owner}/{repo}/contents/{path} for a file of
// the tree at ref (the default branch's when no ref is asked), as GitHub
// does: its bytes in base64; a folder or a missing path is not found here.
func (s *Server) content(rq *request) response {
	ref := rq.query.Get("ref")
	if ref == "" {
		ref = "master"
	}
	t := s.st.trees[rq.repo+"@"+shortRef(ref)]
	if t == nil {
		return notFound()
	}
	p := strings.Trim(rq.params["path"], "/")
	data, ok := fileInTarball(t.tgz, p)
	if !ok {
		return s.folder(t, ref, p)
	}
	return response{status: http.StatusOK, body: s.contentEntry(t, ref, p, data, true)}
}

// folder answers GET /repos/{owner}/{repo}/contents/{path} for a folder:
// its entries, files and folders, without their content, as GitHub lists
// them.
func (s *Server) folder(t *tree, ref, p string) response {
	files := filesOf(t.tgz)
	entries := map[string]map[string]any{}
	for name, data := range files {
		rest, ok := strings.CutPrefix(name, p+"/")
		if !ok {
			continue
		}
		child, _, deeper := strings.Cut(rest, "/")
		full := p + "/" + child
		if deeper {
			if entries[child] == nil {
				e := s.contentEntry(t, ref, full, nil, false)
				e["type"], e["size"], e["download_url"] = "dir", 0, nil
				entries[child] = e
			}
			continue
		}
		entries[child] = s.contentEntry(t, ref, full, data, false)
	}
	if len(entries) == 0 {
		return notFound()
	}
	names := make([]string, 0, len(entries))
	for n := range entries {
		names = append(names, n)
	}
	sort.Strings(names)
	list := make([]any, len(names))
	for i, n := range names {
		list[i] = entries[n]
	}
	return response{status: http.StatusOK, body: list}
}

// contentEntry is a file of the contents API, with its content when
// withContent (a file read alone) and without it (an entry of a folder).
func (s *Server) contentEntry(t *tree, ref, p string, data []byte, withContent bool) map[string]any {
	api := s.apiURL("/repos/%s/%s/contents/%s?ref=%s", t.owner, t.name, p, url.QueryEscape(ref))
	html := fmt.Sprintf("https://github.com/%s/%s/blob/%s/%s", t.owner, t.name, ref, p)
	sum := sha1.Sum(append([]byte(fmt.Sprintf("blob %d\x00", len(data))), data...))
	sha := hex.EncodeToString(sum[:])
	git := s.apiURL("/repos/%s/%s/git/blobs/%s", t.owner, t.name, sha)
	e := map[string]any{
		"type": "file", "size": len(data), "name": path.Base(p), "path": p,
		"sha": sha, "url": api, "git_url": git, "html_url": html,
		"download_url": fmt.Sprintf("https://raw.githubusercontent.com/%s/%s/%s/%s", t.owner, t.name, t.sha, p),
		"_links":       map[string]any{"self": api, "git": git, "html": html},
	}
	if withContent {
		e["encoding"], e["content"] = "base64", base64.StdEncoding.EncodeToString(data)
	}
	return e
}

// fileInTarball is the file at p (below the archive's one top folder).
func fileInTarball(tgz []byte, p string) ([]byte, bool) {
	gz, err := gzip.NewReader(bytes.NewReader(tgz))
	if err != nil {
		return nil, false
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err != nil {
			return nil, false
		}
		if _, rel, ok := strings.Cut(h.Name, "/"); ok && rel == p && h.Typeflag == tar.TypeReg {
			data, err := io.ReadAll(tr)
			return data, err == nil
		}
	}
}

// compare answers GET /repos/{owner}/{repo}/compare/{base}...{head} for two
// trees the test set: the files added, modified and removed from base to
// head, at most 300 as GitHub lists them; and, for commits of the graph
// the test recorded (SetParents), how head stands to base (status,
// ahead_by, behind_by). A branch name stands for its commit (SetBranch).
func (s *Server) compare(rq *request) response {
	// GitHub's description has the path twice, as {basehead} and as
	// {base}...{head}: one segment either way.
	bh := rq.params["basehead"]
	if bh == "" {
		bh = rq.params["base}...{head"]
	}
	base, head, ok := strings.Cut(bh, "...")
	if !ok {
		return ghError(http.StatusNotFound, "Not Found")
	}
	base, head = s.st.resolve(rq.repo, base), s.st.resolve(rq.repo, head)
	status, aheadBy, behindBy, graphed := s.st.comparison(rq.repo, base, head)
	bt, ht := s.st.trees[rq.repo+"@"+base], s.st.trees[rq.repo+"@"+head]
	if (bt == nil || ht == nil) && !graphed {
		return notFound()
	}
	var was, now map[string][]byte
	if bt != nil && ht != nil {
		was, now = filesOf(bt.tgz), filesOf(ht.tgz)
	}
	var names []string
	for name := range now {
		names = append(names, name)
	}
	for name := range was {
		if _, ok := now[name]; !ok {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	out := s.template("repos/compare-commits", "200")
	if graphed {
		out["status"], out["ahead_by"], out["behind_by"], out["total_commits"] = status, aheadBy, behindBy, aheadBy
	}
	tmpl, _ := out["files"].([]any)
	var files []any
	for _, name := range names {
		status := "modified"
		switch w, n := was[name], now[name]; {
		case w == nil:
			status = "added"
		case n == nil:
			status = "removed"
		case bytes.Equal(w, n):
			continue
		}
		f := map[string]any{}
		if len(tmpl) > 0 {
			if t, ok := tmpl[0].(map[string]any); ok {
				for k, v := range t {
					f[k] = v
				}
			}
		}
		delete(f, "previous_filename")
		f["filename"], f["status"] = name, status
		files = append(files, f)
		if len(files) == 300 {
			break
		}
	}
	if files == nil {
		files = []any{}
	}
	out["files"] = files
	return response{status: http.StatusOK, body: out}
}

// filesOf is every regular file of a tarball, below its one top folder.
func filesOf(tgz []byte) map[string][]byte {
	out := map[string][]byte{}
	gz, err := gzip.NewReader(bytes.NewReader(tgz))
	if err != nil {
		return out
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err != nil {
			return out
		}
		if _, rel, ok := strings.Cut(h.Name, "/"); ok && h.Typeflag == tar.TypeReg {
			data, err := io.ReadAll(tr)
			if err != nil {
				return out
			}
			out[rel] = data
		}
	}
}
