// Package backend stores releases in a gocloud.dev/blob bucket, in Kusion
// v0.15's layout, so a bucket written by the Kusion CLI is readable here and
// ours by it:
//
//	<prefix>/releases/<project>/<workspace>/<revision>.yaml
//	<prefix>/releases/<project>/<workspace>/.metadata.yml   (the index)
//
// Unlike Kusion it locks: a revision's file is created with a create-only write,
// so exactly one writer gets each slot, and whoever created the latest slot
// holds the stack until that release's phase has ended (see Begin).
//
// The index is a hint kept for Kusion: readers take its latestRevision as a
// starting point and probe the following slots with Exists, so finding the
// latest release costs the same few requests however many releases exist, and
// an index that lags is repaired.
package backend

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"gocloud.dev/blob"
	_ "gocloud.dev/blob/fileblob" // file:// (the local default)
	_ "gocloud.dev/blob/memblob"  // mem:// (tests, dry runs)
	"sigs.k8s.io/yaml"

	"github.com/kusionpr/kusionpr/internal/kusionhome"
	"github.com/kusionpr/kusionpr/internal/yamlenc"
	"github.com/kusionpr/kusionpr/model"
)

var (
	// ErrNotFound is wrapped by errors about a release that does not exist.
	ErrNotFound = errors.New("release not found")
	// ErrRevisionTaken is wrapped by Create's error when the revision's slot
	// already holds a release.
	ErrRevisionTaken = errors.New("revision already taken")
	// ErrHeld matches every *HeldError with errors.Is.
	ErrHeld = errors.New("stack is held by a running release")
)

// beginAttempts bounds how often Begin retries after losing a slot to a
// release that had already ended by the time it was read.
const beginAttempts = 5

const (
	releasesDir = "releases"
	indexName   = ".metadata.yml"
	releaseExt  = ".yaml"
)

// The most a read takes of one object: a release or index past it (corrupt,
// or put there to exhaust the runner's memory) is refused, naming its key,
// after reading at most one byte more. A release of 10,000 Kubernetes
// objects with their recorded state is about 40 MB; an index entry is about
// 45 bytes, so the index limit allows some 370,000 revisions.
const (
	DefaultMaxReleaseBytes = 128 << 20
	DefaultMaxIndexBytes   = 16 << 20
)

// Store keeps the releases of many projects and workspaces in one bucket.
// It is safe for concurrent use, by goroutines and by processes sharing the bucket.
type Store struct {
	bucket *blob.Bucket // nil for stores built in tests over a fake
	obj    objects
	prefix string // "" or ends in "/"

	// Lease is how long a running release holds the stack without a sign of
	// life (a write: its state, its heartbeat). Past it, the next Begin
	// supersedes the release as abandoned. Holders write at least every
	// Lease/5 (see HeartbeatInterval). Default DefaultLease.
	Lease time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
	// MaxReleaseBytes and MaxIndexBytes bound what one read of a release
	// or of an index takes (default DefaultMaxReleaseBytes, DefaultMaxIndexBytes).
	MaxReleaseBytes, MaxIndexBytes int64
}

func (s *Store) maxRelease() int64 {
	if s.MaxReleaseBytes > 0 {
		return s.MaxReleaseBytes
	}
	return DefaultMaxReleaseBytes
}

func (s *Store) maxIndex() int64 {
	if s.MaxIndexBytes > 0 {
		return s.MaxIndexBytes
	}
	return DefaultMaxIndexBytes
}

// readObject reads key within limit; what names the object in the errors.
func (s *Store) readObject(ctx context.Context, key string, limit int64, what string) ([]byte, error) {
	data, err := s.obj.read(ctx, key, limit)
	if errors.Is(err, errObjectTooLarge) {
		return nil, fmt.Errorf("%s %s is refused, %w (a corrupt or hostile object: not read; remove or repair it)", what, key, err)
	}
	return data, err
}

// DefaultLease suits runners that die with their machine: a crashed apply
// blocks its stack for five minutes at most.
const DefaultLease = 5 * time.Minute

func (s *Store) lease() time.Duration {
	if s.Lease > 0 {
		return s.Lease
	}
	return DefaultLease
}

func (s *Store) now() time.Time {
	if s.Now != nil {
		return s.Now().UTC()
	}
	return time.Now().UTC()
}

// HeartbeatInterval is how often a holder must show it is alive.
func (s *Store) HeartbeatInterval() time.Duration { return s.lease() / 5 }

// ErrSuperseded is wrapped by Update's error when the release was ended by
// someone else (superseded after its lease, or unlocked): its holder must stop.
var ErrSuperseded = model.ErrSuperseded

// LastSign is when r last showed its holder alive: past the store's lease
// without another, the next Begin supersedes it.
func LastSign(r *model.Release) time.Time {
	t := r.ModifiedTime
	if r.CreateTime.After(t) {
		t = r.CreateTime
	}
	if r.Origin != nil && r.Origin.Heartbeat.After(t) {
		t = r.Origin.Heartbeat
	}
	return t
}

// Open opens the bucket at a gocloud.dev/blob URL (file:// and mem:// are
// built in). The optional query parameter prefix= puts the releases under a
// key prefix, as Kusion's prefix setting does for object stores. For file://
// URLs the folder is created if missing, and fileblob writes no .attrs
// sidecar files and keeps its temporary files next to their targets (a
// rename from os.TempDir fails when the folder is on another filesystem), so
// the folder keeps Kusion's layout. Explicit settings in the URL win.
func Open(ctx context.Context, rawURL string) (*Store, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("open backend %q: %w", rawURL, err)
	}
	if err := checkScheme(rawURL, u); err != nil {
		return nil, err
	}
	switch {
	case u.Scheme == "oss":
		return openS3(ctx, u, s3Credentials{})
	case isPostgres(u.Scheme):
		return openPostgres(ctx, u)
	case u.Scheme == "https" || u.Scheme == "http":
		return openHTTP(ctx, u)
	}
	q := u.Query()
	prefix, err := cleanPrefix(q.Get("prefix"))
	if err != nil {
		return nil, fmt.Errorf("open backend %q: %w", rawURL, err)
	}
	q.Del("prefix")
	var dir string
	if u.Scheme == "file" {
		for k, v := range map[string]string{"create_dir": "true", "metadata": "skip", "no_tmp_dir": "true"} {
			if !q.Has(k) {
				q.Set(k, v)
			}
		}
		// The folder the way fileblob's URL opener derives it.
		p := u.Path
		if u.Host == "." || os.PathSeparator != '/' {
			p = strings.TrimPrefix(p, "/")
		}
		if dir, err = filepath.Abs(filepath.FromSlash(p)); err != nil {
			return nil, fmt.Errorf("open backend %q: %w", rawURL, err)
		}
	}
	u.RawQuery = q.Encode()
	b, err := blob.OpenBucket(ctx, u.String())
	if err != nil {
		return nil, fmt.Errorf("open backend %q: %w", rawURL, err)
	}
	s := &Store{bucket: b, prefix: prefix}
	switch {
	case dir != "":
		s.obj = fileObjects{bucketObjects: bucketObjects{b}, dir: dir}
	case u.Scheme == "mem":
		s.obj = bucketObjects{b}
	default:
		s.obj = bucketObjects{b}
		return checked(ctx, s, location(u), u.Host)
	}
	return s, nil
}

// DefaultURL is Kusion's default local folder: $KUSION_HOME, else .kusion in
// the user's home, as Kusion finds it (kusionhome.Dir).
func DefaultURL() string {
	dir, err := kusionhome.Dir()
	if err != nil {
		dir = ".kusion"
	}
	return FolderURL(dir)
}

// FolderURL is the file:// URL of the folder dir, made absolute.
func FolderURL(dir string) string {
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	p := filepath.ToSlash(dir)
	if !strings.HasPrefix(p, "/") { // C:/x on Windows
		p = "/" + p
	}
	return (&url.URL{Scheme: "file", Path: p}).String()
}

// Close releases the bucket.
func (s *Store) Close() error { return s.obj.close() }

// newStore builds a Store over any objects implementation (tests).
func newStore(obj objects, prefix string) *Store {
	return &Store{obj: obj, prefix: prefix}
}

func (s *Store) dirKey(project, workspace string) string {
	return s.prefix + releasesDir + "/" + project + "/" + workspace + "/"
}

func (s *Store) indexKey(project, workspace string) string {
	return s.dirKey(project, workspace) + indexName
}

func (s *Store) releaseKey(project, workspace string, revision uint64) string {
	return s.dirKey(project, workspace) + strconv.FormatUint(revision, 10) + releaseExt
}

// Latest returns the release with the highest revision, or nil, nil when the
// project's workspace has none. It reads the index, probes the slots after
// its latestRevision and reads the last one: a constant number of requests.
func (s *Store) Latest(ctx context.Context, project, workspace string) (*model.Release, error) {
	if err := validNames(project, workspace); err != nil {
		return nil, fmt.Errorf("read latest release %s/%s: %w", project, workspace, err)
	}
	latest, _, err := s.scan(ctx, project, workspace, false, false)
	if err != nil {
		return nil, fmt.Errorf("read latest release %s/%s: %w", project, workspace, err)
	}
	return latest, nil
}

// latestForWrite is Latest for a caller about to write the project's
// workspace (Begin, Unlock): it also repairs the index where the probes
// show it wrong, for Kusion's CLI, which trusts it. A read alone never
// writes.
func (s *Store) latestForWrite(ctx context.Context, project, workspace string) (*model.Release, error) {
	if err := validNames(project, workspace); err != nil {
		return nil, fmt.Errorf("read latest release %s/%s: %w", project, workspace, err)
	}
	latest, _, err := s.scan(ctx, project, workspace, true, true)
	if err != nil {
		return nil, fmt.Errorf("read latest release %s/%s: %w", project, workspace, err)
	}
	return latest, nil
}

// Revisions returns the revisions of the project's workspace in ascending
// order, from the index; slots the index misses (it lags, or a concurrent
// index update was lost) are found by probing and added to it.
func (s *Store) Revisions(ctx context.Context, project, workspace string) ([]uint64, error) {
	if err := validNames(project, workspace); err != nil {
		return nil, fmt.Errorf("list revisions %s/%s: %w", project, workspace, err)
	}
	_, ix, err := s.scan(ctx, project, workspace, true, false)
	if err != nil {
		return nil, fmt.Errorf("list revisions %s/%s: %w", project, workspace, err)
	}
	revs := make([]uint64, 0, len(ix.Releases))
	for _, e := range ix.Releases {
		revs = append(revs, e.Revision)
	}
	return revs, nil
}

// scan finds the latest release from the index and probing, and returns
// both, the index completed with what the probes found; with repair it
// writes that index back where it was wrong. With gaps it also finds the
// revisions below the latest that the index does not list.
//
// The index is never trusted to bound a loop: probing forward stops at the
// first free slot, so it costs what exists; an index naming a revision that
// does not exist (restored, hand-edited, or written to make readers walk
// back a billion slots) sends the reader to the folder's listing, whose
// length is what exists too. Every step honours ctx.
func (s *Store) scan(ctx context.Context, project, workspace string, gaps, repair bool) (*model.Release, *index, error) {
	ix, _, err := s.readIndex(ctx, project, workspace)
	if err != nil {
		return nil, nil, err
	}
	changed := false

	// Probe forward from the index's latest.
	top := ix.LatestRevision
	var found []uint64
	for top < math.MaxUint64 {
		ok, err := s.obj.exists(ctx, s.releaseKey(project, workspace, top+1))
		if err == nil {
			err = ctx.Err()
		}
		if err != nil {
			return nil, nil, fmt.Errorf("probe release %s/%s/%d: %w", project, workspace, top+1, err)
		}
		if !ok {
			break
		}
		top++
		found = append(found, top)
	}

	var latest *model.Release
	var listed []uint64 // nil until the folder is listed
	if top > 0 {
		latest, err = s.Get(ctx, project, workspace, top)
		if err != nil && !errors.Is(err, ErrNotFound) {
			return nil, nil, err
		}
	}
	if top > 0 && latest == nil {
		// The index names a revision that does not exist: the listing says
		// which do. Take the highest that still reads.
		if listed, err = s.listRevisions(ctx, project, workspace); err != nil {
			return nil, nil, err
		}
		top = 0
		for i := len(listed) - 1; i >= 0 && latest == nil; i-- {
			latest, err = s.Get(ctx, project, workspace, listed[i])
			if err != nil && !errors.Is(err, ErrNotFound) {
				return nil, nil, err
			}
			if latest != nil {
				top = listed[i]
			}
		}
	}
	if top != ix.LatestRevision || len(found) > 0 {
		changed = true
	}
	// Drop entries past the real latest, then record what probing found.
	kept := ix.Releases[:0]
	for _, e := range ix.Releases {
		if e.Revision <= top {
			kept = append(kept, e)
		}
	}
	ix.Releases = kept
	ix.LatestRevision = top

	var missing []uint64
	for _, rev := range found {
		if rev != top {
			missing = append(missing, rev)
		}
	}
	if gaps && uint64(len(ix.Releases)) < top {
		// Some revision below the latest is not in the index: list the
		// folder rather than probe each slot up to a number that may be huge.
		if listed == nil {
			if listed, err = s.listRevisions(ctx, project, workspace); err != nil {
				return nil, nil, err
			}
		}
		for _, rev := range listed {
			if rev < top && ix.entry(rev) == nil && !containsRev(found, rev) {
				missing = append(missing, rev)
			}
		}
	}
	for _, rev := range missing {
		r, err := s.Get(ctx, project, workspace, rev)
		if err != nil {
			return nil, nil, err
		}
		if ix.set(r) {
			changed = true
		}
	}
	if latest != nil && ix.set(latest) {
		changed = true
	}
	if changed && repair {
		// Best effort: the repair helps Kusion's CLI, which trusts the index,
		// but our readers do not need it.
		_ = s.writeIndex(ctx, project, workspace, ix)
	}
	return latest, ix, nil
}

// listRevisions lists the revisions whose release files exist, ascending.
// Other names in the folder (the index, temporary files) are left out.
func (s *Store) listRevisions(ctx context.Context, project, workspace string) ([]uint64, error) {
	prefix := s.dirKey(project, workspace)
	names, err := s.obj.list(ctx, prefix)
	if err != nil {
		return nil, fmt.Errorf("list releases %s: %w", prefix, err)
	}
	var revs []uint64
	for _, n := range names {
		num, ok := strings.CutSuffix(n, releaseExt)
		if !ok {
			continue
		}
		rev, err := strconv.ParseUint(num, 10, 64)
		if err != nil || rev == 0 || strconv.FormatUint(rev, 10) != num {
			continue
		}
		revs = append(revs, rev)
	}
	slices.Sort(revs)
	return revs, nil
}

func containsRev(revs []uint64, rev uint64) bool {
	for _, r := range revs {
		if r == rev {
			return true
		}
	}
	return false
}

// Get reads one release. A missing one gives an error wrapping ErrNotFound.
func (s *Store) Get(ctx context.Context, project, workspace string, revision uint64) (*model.Release, error) {
	if err := validNames(project, workspace); err != nil {
		return nil, fmt.Errorf("read release %s/%s/%d: %w", project, workspace, revision, err)
	}
	key := s.releaseKey(project, workspace, revision)
	data, err := s.readObject(ctx, key, s.maxRelease(), "release")
	if errors.Is(err, errObjectMissing) {
		return nil, fmt.Errorf("read release %s/%s/%d: %w", project, workspace, revision, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("read release %s/%s/%d: %w", project, workspace, revision, err)
	}
	r, err := decodeRelease(key, data)
	if err != nil {
		return nil, err
	}
	// The slot is the truth about which revision a file is.
	r.Revision = revision
	if r.Project == "" {
		r.Project = project
	}
	if r.Workspace == "" {
		r.Workspace = workspace
	}
	return r, nil
}

func decodeRelease(key string, data []byte) (*model.Release, error) {
	r := &model.Release{}
	if err := decodeInto(key, data, r); err != nil {
		return nil, err
	}
	return r, nil
}

// decodeInto reads a release file, YAML or (a running release of ours)
// JSON, into v.
func decodeInto(key string, data []byte, v any) error {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return fmt.Errorf("decode release %s: the file is empty", key)
	}
	var err error
	if trimmed[0] == '{' {
		err = json.Unmarshal(trimmed, v)
	} else {
		err = yaml.Unmarshal(data, v)
	}
	if err != nil {
		return fmt.Errorf("decode release %s: %w", key, err)
	}
	return nil
}

// encodeRelease writes an ended release as YAML, as Kusion does, and a
// running one as JSON: JSON is YAML, so Kusion reads it all the same, and a
// running release is rewritten as its resources finish, where encoding a
// 1,000-resource release as YAML took a tenth of a second of the CPU the
// apply itself needs, each time.
func encodeRelease(r *model.Release) ([]byte, error) {
	var (
		data []byte
		err  error
	)
	if r.Phase.Ended() {
		// Resource by resource: encoding the whole at once held every
		// event of the document (most of a 10,000-resource apply's peak).
		data, err = yamlenc.MarshalLists(r, "spec.resources", "state.resources")
	} else {
		data, err = json.Marshal(r)
	}
	if err != nil {
		return nil, fmt.Errorf("encode release %s/%s/%d: %w", r.Project, r.Workspace, r.Revision, err)
	}
	return data, nil
}

func checkRelease(r *model.Release) error {
	if r == nil {
		return errors.New("release is nil")
	}
	if err := validNames(r.Project, r.Workspace); err != nil {
		return err
	}
	if r.Revision == 0 {
		return errors.New("revision must be at least 1")
	}
	return nil
}

// Create writes a new release into its revision's slot, only if the slot is
// free: if it holds a release, the error wraps ErrRevisionTaken and nothing
// is written. Zero CreateTime and ModifiedTime are set to now. The index is
// updated afterwards, on a best-effort basis (see Latest).
func (s *Store) Create(ctx context.Context, r *model.Release) error {
	if err := checkRelease(r); err != nil {
		return fmt.Errorf("create release: %w", err)
	}
	now := s.now()
	if r.CreateTime.IsZero() {
		r.CreateTime = now
	}
	if r.ModifiedTime.IsZero() {
		r.ModifiedTime = r.CreateTime
	}
	data, err := encodeRelease(r)
	if err != nil {
		return err
	}
	err = s.writeRelease(ctx, r, data, true)
	if errors.Is(err, errObjectExists) {
		return fmt.Errorf("create release %s/%s/%d: %w", r.Project, r.Workspace, r.Revision, ErrRevisionTaken)
	}
	if err != nil {
		return fmt.Errorf("create release %s/%s/%d: %w", r.Project, r.Workspace, r.Revision, err)
	}
	// The release is written and the slot is ours; the index is only a hint
	// that readers repair, so its failure must not make the caller believe
	// it lost the slot.
	_ = s.recordInIndex(ctx, r)
	return nil
}

// Update overwrites an existing release: the holder saving its state and
// phase. It refuses (ErrNotFound) a revision that does not exist, so it never
// takes a slot. ModifiedTime is set to now. When the phase or stack changed,
// the index entry is rewritten (best effort).
func (s *Store) Update(ctx context.Context, r *model.Release) error {
	if err := checkRelease(r); err != nil {
		return fmt.Errorf("update release: %w", err)
	}
	key := s.releaseKey(r.Project, r.Workspace, r.Revision)
	data, err := s.readObject(ctx, key, s.maxRelease(), "release")
	if errors.Is(err, errObjectMissing) {
		err = ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("update release %s/%s/%d: %w", r.Project, r.Workspace, r.Revision, err)
	}
	// Only whether someone else ended it matters here: the rest of the
	// stored release is not decoded.
	var stored struct {
		Phase   model.Phase `json:"phase"`
		Message string      `json:"message"`
	}
	if err := decodeInto(key, data, &stored); err != nil {
		return fmt.Errorf("update release: %w", err)
	}
	if stored.Phase.Ended() && isTakeover(stored.Message) {
		// Someone ended this release while its holder ran (it was taken as
		// abandoned, or unlocked): the holder must not bring it back.
		return fmt.Errorf("update release %s/%s/%d: %w: %s", r.Project, r.Workspace, r.Revision, ErrSuperseded, stored.Message)
	}
	s.touch(r)
	if data, err = encodeRelease(r); err != nil {
		return err
	}
	if err := s.writeRelease(ctx, r, data, false); err != nil {
		return fmt.Errorf("update release %s/%s/%d: %w", r.Project, r.Workspace, r.Revision, err)
	}
	_ = s.recordInIndex(ctx, r)
	return nil
}

// Begin takes the stack for r. If the latest release is still running, it
// fails with a *HeldError naming it. Otherwise r gets the next revision (1
// if there is none) and is created in that slot; only one concurrent Begin
// can win a slot. A Begin that loses reports the winner as a *HeldError if
// it is running, and tries the next slot if it has ended already.
//
// r.Phase must be a running phase (that is what holds the stack). Begin
// returns the release before r (nil if r is the first), whose state the
// caller diffs against. On error r.Revision is left as it was.
func (s *Store) Begin(ctx context.Context, r *model.Release) (prior *model.Release, err error) {
	return s.BeginIf(ctx, r, nil)
}

// BeginIf is Begin that first asks cond about the release r would follow,
// each time it tries a slot; an error of cond is returned as it is and
// nothing is written. As the slot is created only if still free, cond saw
// the true latest release when r wins: a decision such as "a newer merge
// was applied, skip this one" cannot be overtaken between check and begin.
func (s *Store) BeginIf(ctx context.Context, r *model.Release, cond func(latest *model.Release) error) (prior *model.Release, err error) {
	prior, abandoned, err := s.begin(ctx, r, cond)
	if err != nil || abandoned == nil {
		return prior, err
	}
	// Our slot follows the abandoned release: end it, saying why. Only the
	// winner of the slot gets here, so only one runner writes this.
	abandoned.Phase = model.PhaseFailed
	abandoned.Message = fmt.Sprintf("%s revision %d: no sign of life since %s, past the %s lease",
		supersededPrefix, r.Revision, LastSign(abandoned).Format(time.RFC3339), s.lease())
	if err := s.write(ctx, abandoned); err != nil {
		return nil, fmt.Errorf("begin release: took revision %d, but marking abandoned revision %d failed: %w", r.Revision, abandoned.Revision, err)
	}
	return abandoned, nil
}

// Unlock ends the running release of a project's workspace by hand, as
// Kusion's `release unlock` does: it becomes failed, with who unlocked it and
// why. Its holder, if still alive, is refused its next write.
func (s *Store) Unlock(ctx context.Context, project, workspace, who, why string) (*model.Release, error) {
	return s.UnlockIf(ctx, project, workspace, who, why, nil)
}

// UnlockIf is Unlock that first asks cond about the release it would end;
// an error of cond is returned as it is and nothing is written.
func (s *Store) UnlockIf(ctx context.Context, project, workspace, who, why string, cond func(latest *model.Release) error) (*model.Release, error) {
	latest, err := s.Latest(ctx, project, workspace)
	if err != nil {
		return nil, fmt.Errorf("unlock %s/%s: %w", project, workspace, err)
	}
	if cond != nil {
		if err := cond(latest); err != nil {
			return nil, fmt.Errorf("unlock %s/%s: %w", project, workspace, err)
		}
	}
	if latest == nil {
		return nil, fmt.Errorf("unlock %s/%s: there is no release", project, workspace)
	}
	if latest.Phase.Ended() {
		return nil, fmt.Errorf("unlock %s/%s: nothing holds it: the latest release, %d, is %s", project, workspace, latest.Revision, latest.Phase)
	}
	if strings.TrimSpace(who) == "" || strings.TrimSpace(why) == "" {
		return nil, fmt.Errorf("unlock %s/%s: say who unlocks and why: both are recorded in release %d", project, workspace, latest.Revision)
	}
	latest.Phase = model.PhaseFailed
	latest.Message = fmt.Sprintf("%s %s at %s: %s", unlockedPrefix, who, s.now().Format(time.RFC3339), why)
	if err := s.write(ctx, latest); err != nil {
		return nil, fmt.Errorf("unlock %s/%s: %w", project, workspace, err)
	}
	return latest, nil
}

const (
	supersededPrefix = "abandoned: superseded by"
	unlockedPrefix   = "unlocked by"
)

// isTakeover tells a message Begin or Unlock wrote.
func isTakeover(msg string) bool {
	return strings.HasPrefix(msg, supersededPrefix) || strings.HasPrefix(msg, unlockedPrefix)
}

// touch sets r's ModifiedTime to now, to the nanosecond as Kusion writes
// it, and never before its CreateTime: a release created by a machine whose
// clock is ahead of ours must not read as modified before it began.
func (s *Store) touch(r *model.Release) {
	r.ModifiedTime = s.now()
	if r.ModifiedTime.Before(r.CreateTime) {
		r.ModifiedTime = r.CreateTime
	}
}

// write rewrites an existing release unconditionally (Begin and Unlock ending
// someone else's release).
func (s *Store) write(ctx context.Context, r *model.Release) error {
	s.touch(r)
	data, err := encodeRelease(r)
	if err != nil {
		return err
	}
	if err := s.writeRelease(ctx, r, data, false); err != nil {
		return err
	}
	_ = s.recordInIndex(ctx, r)
	return nil
}

// begin takes the next slot; abandoned is the running release past its lease
// that the slot supersedes, if any.
func (s *Store) begin(ctx context.Context, r *model.Release, cond func(*model.Release) error) (prior, abandoned *model.Release, err error) {
	if r == nil {
		return nil, nil, errors.New("begin release: release is nil")
	}
	if err := validNames(r.Project, r.Workspace); err != nil {
		return nil, nil, fmt.Errorf("begin release: %w", err)
	}
	if r.Phase == "" || r.Phase.Ended() {
		return nil, nil, fmt.Errorf("begin release %s/%s: phase %q does not hold the stack; begin with a running phase", r.Project, r.Workspace, r.Phase)
	}
	orig := r.Revision
	defer func() {
		if err != nil {
			r.Revision = orig
		}
	}()
	for attempt := 0; attempt < beginAttempts; attempt++ {
		latest, err := s.latestForWrite(ctx, r.Project, r.Workspace)
		if err != nil {
			return nil, nil, fmt.Errorf("begin release: %w", err)
		}
		abandoned = nil
		if latest != nil && !latest.Phase.Ended() {
			if s.now().Sub(LastSign(latest)) <= s.lease() {
				return nil, nil, heldBy(latest)
			}
			abandoned = latest
		}
		if cond != nil {
			if err := cond(latest); err != nil {
				return nil, nil, err
			}
		}
		r.Revision = 1
		if latest != nil {
			if latest.Revision == math.MaxUint64 {
				return nil, nil, fmt.Errorf("begin release %s/%s: the latest revision is %d, the last there is", r.Project, r.Workspace, latest.Revision)
			}
			r.Revision = latest.Revision + 1
		}
		err = s.Create(ctx, r)
		if err == nil {
			return latest, abandoned, nil
		}
		if !errors.Is(err, ErrRevisionTaken) {
			return nil, nil, fmt.Errorf("begin release: %w", err)
		}
		winner, err := s.Get(ctx, r.Project, r.Workspace, r.Revision)
		if err != nil {
			return nil, nil, fmt.Errorf("begin release: revision %d was taken: %w", r.Revision, err)
		}
		if !winner.Phase.Ended() {
			return nil, nil, heldBy(winner)
		}
		// The winner has run and ended already: try the slot after it.
	}
	return nil, nil, fmt.Errorf("begin release %s/%s: lost the next revision slot %d times in a row to releases that ended at once: %w",
		r.Project, r.Workspace, beginAttempts, ErrRevisionTaken)
}

// HeldError says a running release holds the stack.
type HeldError struct {
	Project, Workspace string
	Revision           uint64
	Phase              model.Phase
	CreateTime         time.Time
	Origin             *model.Origin
}

func heldBy(r *model.Release) *HeldError {
	return &HeldError{
		Project:    r.Project,
		Workspace:  r.Workspace,
		Revision:   r.Revision,
		Phase:      r.Phase,
		CreateTime: r.CreateTime,
		Origin:     r.Origin,
	}
}

func (e *HeldError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "project %q workspace %q is held by revision %d (%s)", e.Project, e.Workspace, e.Revision, e.Phase)
	if !e.CreateTime.IsZero() {
		b.WriteString(", started " + e.CreateTime.UTC().Format(time.RFC3339))
	}
	if o := e.Origin; o != nil {
		who := o.User
		if who == "" {
			who = o.Actor
		}
		if o.Host != "" {
			who += "@" + o.Host
		}
		var what []string
		if o.Command != "" {
			what = append(what, o.Command)
		}
		if o.PullRequest != 0 {
			what = append(what, "PR #"+strconv.Itoa(o.PullRequest))
		}
		if who != "" {
			b.WriteString(" by " + who)
		}
		if len(what) > 0 {
			b.WriteString(" (" + strings.Join(what, ", ") + ")")
		}
	}
	b.WriteString("; wait for it to end or unlock it")
	return b.String()
}

// Is makes errors.Is(err, ErrHeld) true for a *HeldError.
func (e *HeldError) Is(target error) bool { return target == ErrHeld }

// validNames checks project and workspace names. They become key segments
// (and, for file://, folder names), so they must be one clean segment each.
func validNames(project, workspace string) error {
	if err := validName("project", project); err != nil {
		return err
	}
	return validName("workspace", workspace)
}

func validName(what, s string) error {
	switch {
	case s == "":
		return fmt.Errorf("%s name is empty", what)
	case s == "." || s == "..":
		return fmt.Errorf("%s name %q is not allowed", what, s)
	case !utf8.ValidString(s):
		return fmt.Errorf("%s name %q is not valid UTF-8", what, s)
	case strings.ContainsAny(s, `/\`):
		return fmt.Errorf("%s name %q contains a slash", what, s)
	case strings.HasSuffix(s, ".."):
		// fileblob escapes the "/" of "../", which would move the file.
		return fmt.Errorf("%s name %q ends in \"..\"", what, s)
	}
	for _, c := range s {
		if c < 0x20 || c == 0x7f {
			return fmt.Errorf("%s name %q contains a control character", what, s)
		}
	}
	return nil
}

// cleanPrefix turns a prefix= value into "" or "a/b/", as Kusion does
// (surrounding slashes dropped).
func cleanPrefix(p string) (string, error) {
	p = strings.Trim(p, "/")
	if p == "" {
		return "", nil
	}
	for _, seg := range strings.Split(p, "/") {
		if err := validName("prefix segment", seg); err != nil {
			return "", err
		}
	}
	return p + "/", nil
}
