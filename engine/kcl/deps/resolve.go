// Package deps fetches the dependencies a KCL stack's kcl.mod names, and
// theirs, into a content-addressed cache, and returns them as the (name,
// folder) pairs KCL's runtime takes as external packages.
//
// Every source is checked against the operator's allowlist (AllowSetting)
// after the operator's mirrors (MirrorsSetting) are applied, before any
// connection; connections are then held to public addresses unless the
// allowlist entry itself names a loopback, private or link-local address.
//
// What is treated as immutable, and so reused from the cache across
// processes without asking the server: a git commit and an OCI digest, by
// construction; and a tag, git's or OCI's, once fetched (the cache index
// records the commit or manifest digest it led to). kpm refuses to push a
// version that exists already (pkg/client/push.go checks ContainsTag), so
// a KCL package's tag names one release; moving a git tag is what git's
// own manual calls "the insane thing". A kcl.mod.lock's sums, when present,
// still check whatever the tag led to. A branch, or no reference, is
// fetched again by each process, once.
package deps

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/kusionpr/kusionpr/engine/kcl/kclmod"
	"github.com/kusionpr/kusionpr/internal/confine"
)

// Options configure a Resolver.
type Options struct {
	// CacheDir holds fetched packages; several processes may share it.
	CacheDir string
	// Allow is the allowlist setting's value (empty: DefaultAllow).
	Allow string
	// Mirrors is the mirror setting's value (empty: none).
	Mirrors string
	// Limits bound each fetch; zero fields take DefaultLimits'.
	Limits Limits
	// Lookup resolves host names (nil: the system resolver).
	Lookup LookupFunc
	// Logger receives what was fetched and reused (nil: slog.Default()).
	Logger *slog.Logger
}

// Package is a resolved dependency: the name KCL code imports it by and
// the folder holding it.
type Package struct {
	Name string
	Dir  string
	// Source is where it came from, after mirrors.
	Source string
	// Resolved is the commit or manifest digest fetched (empty for a path).
	Resolved string
}

// Resolver fetches dependencies. It is safe for concurrent use; each
// source and reference is fetched at most once per Resolver.
type Resolver struct {
	cache   cache
	allow   Allowlist
	mirrors Mirrors
	lim     Limits
	lookup  LookupFunc
	log     *slog.Logger
	dialer  checkedDialer
	client  *http.Client

	group singleflight.Group
	mu    sync.Mutex
	memo  map[string]fetched
	// mods holds fetched packages' own kcl.mod and lock, by folder.
	mods map[string]packageMods
}

type fetched struct {
	dir, resolved string
}

// New checks the options and returns a Resolver.
func New(opts Options) (*Resolver, error) {
	if opts.CacheDir == "" {
		return nil, errors.New("configuring KCL dependency resolution: no cache folder")
	}
	allow, err := ParseAllow(opts.Allow)
	if err != nil {
		return nil, fmt.Errorf("configuring KCL dependency resolution: %w", err)
	}
	mirrors, err := ParseMirrors(opts.Mirrors)
	if err != nil {
		return nil, fmt.Errorf("configuring KCL dependency resolution: %w", err)
	}
	r := &Resolver{
		cache:   cache{dir: opts.CacheDir},
		allow:   allow,
		mirrors: mirrors,
		lim:     opts.Limits.withDefaults(),
		lookup:  opts.Lookup,
		log:     opts.Logger,
		memo:    map[string]fetched{},
		mods:    map[string]packageMods{},
	}
	if r.lookup == nil {
		r.lookup = defaultLookup
	}
	if r.log == nil {
		r.log = slog.Default()
	}
	r.dialer = checkedDialer{lookup: r.lookup, allow: allow, timeout: 30 * time.Second}
	r.client = r.dialer.httpClient()
	return r, nil
}

// pending is a dependency waiting to be resolved, with what it was found in.
type pending struct {
	dep kclmod.Dependency
	// dir is the folder of the kcl.mod naming it, root the folder its path
	// dependencies must stay in (the checkout, or the fetched package).
	dir, root string
	lock      *kclmod.Lock
	via       string
}

// Resolve returns the external packages of the stack whose kcl.mod is in
// modDir, inside the checkout at checkoutRoot: its dependencies and
// theirs, sorted by name. Two dependencies of one name must be the same
// source and reference. A stack without kcl.mod has none.
func (r *Resolver) Resolve(ctx context.Context, modDir, checkoutRoot string) ([]Package, error) {
	root, err := filepath.EvalSymlinks(checkoutRoot)
	if err != nil {
		return nil, fmt.Errorf("resolving KCL dependencies: the checkout: %w", err)
	}
	dir, err := confine.Resolve(root, root, modDir)
	if err != nil {
		return nil, fmt.Errorf("resolving KCL dependencies: the stack folder %s: %w", modDir, err)
	}
	if !exists(filepath.Join(dir, kclmod.ModFile)) {
		return nil, nil
	}
	mod, err := kclmod.Load(root, dir)
	if err != nil {
		return nil, err
	}
	rootLock, err := kclmod.LoadLock(root, dir)
	if err != nil {
		return nil, err
	}
	var queue []pending
	for _, d := range mod.Dependencies {
		queue = append(queue, pending{dep: d, dir: dir, root: root, lock: rootLock, via: mod.File})
	}
	seen := map[string]pending{}
	var out []Package
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if prev, ok := seen[p.dep.Name]; ok {
			if prev.dep.Source() != p.dep.Source() || prev.dep.Kind == kclmod.KindPath && prev.dir != p.dir {
				return nil, fmt.Errorf("resolving KCL dependencies: dependency %q is %s in %s and %s in %s: one name must be one package",
					p.dep.Name, prev.dep.Source(), prev.via, p.dep.Source(), p.via)
			}
			continue
		}
		seen[p.dep.Name] = p
		pkg, pkgRoot, err := r.resolveOne(ctx, p)
		if err != nil {
			return nil, err
		}
		if err := r.checkSum(p, rootLock, pkg); err != nil {
			return nil, err
		}
		out = append(out, pkg)
		sub, subLock, err := r.packageMod(pkg, pkgRoot)
		if err != nil {
			return nil, fmt.Errorf("dependency %q (%s): %w", p.dep.Name, p.dep.Source(), err)
		}
		if sub == nil {
			continue
		}
		for _, d := range sub.Dependencies {
			queue = append(queue, pending{dep: d, dir: pkg.Dir, root: pkgRoot, lock: subLock, via: fmt.Sprintf("%s of dependency %q", kclmod.ModFile, p.dep.Name)})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// packageMod is a dependency's own kcl.mod and lock (nil without one). A
// fetched package's folder is named by its content and never changes, so
// what it holds is read once per Resolver: a run's stacks, which name the
// same packages, do not read and parse them again. root is the tree the
// package lies in: the checkout for a path dependency.
func (r *Resolver) packageMod(pkg Package, root string) (*kclmod.Mod, *kclmod.Lock, error) {
	if pkg.Resolved != "" {
		r.mu.Lock()
		m, ok := r.mods[pkg.Dir]
		r.mu.Unlock()
		if ok {
			return m.mod, m.lock, nil
		}
	}
	var m packageMods
	if exists(filepath.Join(pkg.Dir, kclmod.ModFile)) {
		var err error
		if m.mod, err = kclmod.Load(root, pkg.Dir); err != nil {
			return nil, nil, err
		}
		if m.lock, err = kclmod.LoadLock(root, pkg.Dir); err != nil {
			return nil, nil, err
		}
	}
	if pkg.Resolved != "" {
		r.mu.Lock()
		r.mods[pkg.Dir] = m
		r.mu.Unlock()
	}
	return m.mod, m.lock, nil
}

// packageMods is what packageMod read of a fetched package.
type packageMods struct {
	mod  *kclmod.Mod
	lock *kclmod.Lock
}

// checkSum compares the package's kpm checksum with the lock's: the
// stack's lock first (kpm records every dependency, its dependencies'
// too, there), else the lock beside the kcl.mod that named it.
func (r *Resolver) checkSum(p pending, rootLock *kclmod.Lock, pkg Package) error {
	for _, l := range []*kclmod.Lock{rootLock, p.lock} {
		if l == nil {
			continue
		}
		e, ok := l.Dependencies[p.dep.Name]
		if !ok || e.Sum == "" {
			continue
		}
		if p.dep.Kind == kclmod.KindPath {
			return nil
		}
		if !e.Describes(p.dep) {
			// kcl.mod was changed and the lock not updated: the sum is of
			// another version.
			r.log.Warn("kcl.mod.lock entry is for another version; its sum is not checked",
				"lock", l.File, "dependency", p.dep.Name, "source", p.dep.Source())
			continue
		}
		sum, err := HashDir(pkg.Dir)
		if err != nil {
			return fmt.Errorf("dependency %q (%s): %w", p.dep.Name, p.dep.Source(), err)
		}
		if sum != e.Sum {
			return fmt.Errorf("dependency %q (%s): its checksum %s differs from %s recorded in %s: the package changed since the lock was written",
				p.dep.Name, p.dep.Source(), sum, e.Sum, l.File)
		}
		return nil
	}
	return nil
}

// resolveOne returns the package and the folder its own path
// dependencies must stay in.
func (r *Resolver) resolveOne(ctx context.Context, p pending) (Package, string, error) {
	d := p.dep
	wrap := func(err error) error {
		var le *LimitError
		if errors.As(err, &le) {
			le.Dependency, le.Source = d.Name, d.Source()
			return err
		}
		return fmt.Errorf("dependency %q (%s) in %s: %w", d.Name, d.Source(), p.via, err)
	}
	switch d.Kind {
	case kclmod.KindPath:
		if filepath.IsAbs(d.Path) || strings.HasPrefix(d.Path, "/") {
			return Package{}, "", wrap(errors.New("an absolute path is not accepted: write it relative to kcl.mod, inside the checkout"))
		}
		dir, err := confine.Resolve(p.root, p.dir, filepath.FromSlash(d.Path))
		if err != nil {
			return Package{}, "", wrap(fmt.Errorf("the path must stay inside %s once links are followed: %w", p.root, err))
		}
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			return Package{}, "", wrap(errors.New("the path is not a folder"))
		}
		return Package{Name: d.Name, Dir: dir, Source: d.Source()}, p.root, nil
	case kclmod.KindGit, kclmod.KindOCI:
		f, src, err := r.fetch(ctx, d)
		if err != nil {
			return Package{}, "", wrap(err)
		}
		dir, err := findPackage(f.dir, d.Package, d.Name)
		if err != nil {
			return Package{}, "", wrap(err)
		}
		return Package{Name: d.Name, Dir: dir, Source: src, Resolved: f.resolved}, f.dir, nil
	}
	return Package{}, "", wrap(fmt.Errorf("unknown kind %q", d.Kind))
}

// findPackage returns the folder of the fetched tree holding the named
// package: the tree itself unless kcl.mod renamed the dependency
// (`package = ...`) and the tree's own kcl.mod names another package, as
// a repository holding several packages does.
func findPackage(tree, pkg, name string) (string, error) {
	if pkg == name {
		return tree, nil
	}
	var found string
	err := filepath.WalkDir(tree, func(p string, d os.DirEntry, err error) error {
		if err != nil || found != "" {
			return err
		}
		if d.IsDir() || d.Name() != kclmod.ModFile {
			return nil
		}
		m, err := kclmod.Load(tree, filepath.Dir(p))
		if err == nil && m.Package.Name == pkg {
			found = filepath.Dir(p)
			return filepath.SkipAll
		}
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("looking for package %q in the fetched tree: %w", pkg, err)
	}
	if found == "" {
		return "", fmt.Errorf("the fetched tree holds no kcl.mod naming package %q", pkg)
	}
	return found, nil
}

// fetch returns the package d names from the memo, the cache or the
// network, and its source after mirrors.
func (r *Resolver) fetch(ctx context.Context, d kclmod.Dependency) (fetched, string, error) {
	loc, ref, immutable, err := r.locate(d)
	if err != nil {
		return fetched{}, "", err
	}
	src := loc.String()
	key := string(d.Kind) + " " + src + " " + ref
	if loc.plain {
		key = "http:" + key
	}
	r.mu.Lock()
	f, ok := r.memo[key]
	r.mu.Unlock()
	if ok {
		return f, src, nil
	}
	v, err, _ := r.group.Do(key, func() (any, error) {
		if immutable {
			if e, ok := r.cache.lookup(key); ok {
				r.log.Debug("KCL dependency reused from the cache", "source", src, "ref", ref, "resolved", e.Resolved)
				return fetched{dir: r.cache.pkgDir(e.Content), resolved: e.Resolved}, nil
			}
		}
		start := time.Now()
		f, content, err := r.download(ctx, d, loc, ref)
		if err != nil {
			return nil, err
		}
		r.log.Info("KCL dependency fetched", "source", src, "ref", ref, "resolved", f.resolved, "elapsed", time.Since(start).Round(time.Millisecond))
		if immutable {
			if err := r.cache.record(key, indexEntry{Source: src, Ref: ref, Resolved: f.resolved, Content: content}); err != nil {
				return nil, err
			}
		}
		return f, nil
	})
	if err != nil {
		return fetched{}, "", err
	}
	f = v.(fetched)
	r.mu.Lock()
	r.memo[key] = f
	r.mu.Unlock()
	return f, src, nil
}

// AllowError is a source the allowlist refuses; no connection was made.
type AllowError struct {
	Dependency string
	Source     string
	Allowlist  string
}

func (e *AllowError) Error() string {
	return fmt.Sprintf("dependency %q: %s is not allowed by %s (%s); add its host and path prefix there to use it",
		e.Dependency, e.Source, AllowSetting, e.Allowlist)
}

// locate applies mirrors and the allowlist and returns where d is fetched
// from, its reference, and whether the reference is treated as immutable.
func (r *Resolver) locate(d kclmod.Dependency) (location, string, bool, error) {
	var (
		loc       location
		ref       string
		immutable bool
	)
	switch d.Kind {
	case kclmod.KindGit:
		u := d.Git.URL
		rest, plain := strings.CutPrefix(u, "http://")
		if !plain {
			var ok bool
			if rest, ok = strings.CutPrefix(u, "https://"); !ok {
				return loc, "", false, fmt.Errorf("only https:// git URLs are fetched (and http:// where the allowlist names the port), not %q", u)
			}
		}
		if strings.ContainsAny(rest, "@?#") {
			return loc, "", false, fmt.Errorf("the git URL %q carries credentials, a query or a fragment", u)
		}
		l, err := parseLocation(rest)
		if err != nil {
			return loc, "", false, fmt.Errorf("the git URL %q: %w", u, err)
		}
		l.plain = plain
		loc = l
		switch {
		case d.Git.Commit != "":
			ref, immutable = "commit:"+d.Git.Commit, true
		case d.Git.Tag != "":
			ref, immutable = "tag:"+d.Git.Tag, true
		case d.Git.Branch != "":
			ref = "branch:" + d.Git.Branch
		default:
			ref = "HEAD"
		}
	case kclmod.KindOCI:
		l, err := parseLocation(d.OCI.Registry + "/" + d.OCI.Repository)
		if err != nil {
			return loc, "", false, fmt.Errorf("the OCI repository: %w", err)
		}
		loc = l
		immutable = true
		if d.OCI.Digest != "" {
			ref = d.OCI.Digest
		} else {
			ref = d.OCI.Tag
		}
	}
	if m, ok := r.mirrors.rewrite(loc); ok {
		loc = m
	}
	if _, ok := r.allow.match(loc); !ok {
		shown := loc.String()
		if loc.plain {
			shown = "http://" + shown
		}
		return loc, "", false, &AllowError{Dependency: d.Name, Source: d.Source() + " at " + shown, Allowlist: r.allow.String()}
	}
	return loc, ref, immutable, nil
}

// download fetches into a staging folder within the time limit and moves
// the result into the cache; it returns the package and its content name.
func (r *Resolver) download(ctx context.Context, d kclmod.Dependency, loc location, ref string) (fetched, string, error) {
	fctx, cancel := context.WithTimeout(ctx, r.lim.FetchTimeout)
	defer cancel()
	staged, err := r.cache.staging()
	if err != nil {
		return fetched{}, "", err
	}
	defer os.RemoveAll(staged)
	pkgDir := filepath.Join(staged, "pkg")
	if err := os.Mkdir(pkgDir, 0o755); err != nil {
		return fetched{}, "", fmt.Errorf("making the staging folder: %w", err)
	}
	var resolved string
	switch d.Kind {
	case kclmod.KindOCI:
		resolved, err = fetchOCI(fctx, r.client, loc, ref, r.lim, pkgDir)
		if err == nil && d.OCI.Digest != "" && resolved != d.OCI.Digest {
			err = fmt.Errorf("the registry answered manifest %s for %s", resolved, d.OCI.Digest)
		}
	case kclmod.KindGit:
		resolved, err = r.downloadGit(fctx, d, loc, staged, pkgDir)
	}
	if err != nil {
		if fctx.Err() == context.DeadlineExceeded && ctx.Err() == nil {
			return fetched{}, "", &LimitError{Limit: LimitTime, Max: r.lim.FetchTimeout.String()}
		}
		return fetched{}, "", err
	}
	content, err := r.cache.commit(pkgDir)
	if err != nil {
		return fetched{}, "", err
	}
	return fetched{dir: r.cache.pkgDir(content), resolved: resolved}, content, nil
}

func (r *Resolver) downloadGit(ctx context.Context, d kclmod.Dependency, loc location, staged, pkgDir string) (string, error) {
	objects := filepath.Join(staged, "objects")
	if err := os.Mkdir(objects, 0o700); err != nil {
		return "", fmt.Errorf("making a folder for the repository's objects: %w", err)
	}
	defer os.RemoveAll(objects)
	return fetchGit(ctx, r.client, loc, d.Git.Tag, d.Git.Commit, d.Git.Branch, r.lim, objects, pkgDir)
}

// CacheDir is the folder fetched packages are kept in: a program compiled
// with them reads it.
func (r *Resolver) CacheDir() string { return r.cache.dir }
