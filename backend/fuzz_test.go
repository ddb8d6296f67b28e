package backend

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// FuzzReleaseStoreReader feeds the store's reader what a bucket may hold:
// any bytes as revision 1's release file and as the folder's index. Whatever
// they are, Latest must return (a release or an error) before its deadline,
// without panicking, and a release it returns must be the one in the slot
// and encode again. make test runs it for a bounded time; the seeds are the
// Kusion CLI's folder in testdata and the shapes ours write.
func FuzzReleaseStoreReader(f *testing.F) {
	var releases, indexes [][]byte
	err := filepath.WalkDir("testdata", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if d.Name() == indexName {
			indexes = append(indexes, data)
		} else if strings.HasSuffix(p, releaseExt) {
			releases = append(releases, data)
		}
		return nil
	})
	if err != nil || len(releases) == 0 || len(indexes) == 0 {
		f.Fatalf("seeds from testdata: %d releases, %d indexes, %v", len(releases), len(indexes), err)
	}
	for _, r := range releases {
		for _, ix := range indexes {
			f.Add(r, ix)
		}
	}
	running, _ := encodeRelease(release("p", "w", "applying", "alice")) // JSON, as a running release is kept
	ended, _ := encodeRelease(release("p", "w", "succeeded", "alice"))
	for _, ix := range []string{"", "latestRevision: 1\n", "latestRevision: 100000000000\n", "latestRevision: 18446744073709551615\n", "releaseMetaDatas: [{revision: 0}]\n"} {
		f.Add(running, []byte(ix))
		f.Add(ended, []byte(ix))
	}

	f.Fuzz(func(t *testing.T, rel, ix []byte) {
		seed := context.Background()
		base, err := Open(seed, "mem://")
		if err != nil {
			t.Fatal(err)
		}
		defer base.Close()
		s := newStore(base.obj, "")
		s.MaxReleaseBytes, s.MaxIndexBytes = 1<<20, 1<<20
		if err := s.obj.write(seed, s.releaseKey("p", "w", 1), rel, false); err != nil {
			t.Fatal(err)
		}
		if err := s.obj.write(seed, s.indexKey("p", "w"), ix, false); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(seed, 5*time.Second)
		defer cancel()
		latest, err := s.Latest(ctx, "p", "w")
		if ctx.Err() != nil {
			t.Fatalf("Latest ran to its deadline (%v)", err)
		}
		if err != nil {
			if !strings.Contains(err.Error(), "p/w") {
				t.Errorf("error names neither the project nor the workspace: %v", err)
			}
			return
		}
		if latest == nil {
			t.Fatal("Latest found no release where revision 1 exists")
		}
		if latest.Revision != 1 {
			t.Fatalf("Latest gave revision %d, read from slot 1", latest.Revision)
		}
		if latest.Project == "" || latest.Workspace == "" {
			t.Fatalf("release without its project or workspace: %+v", latest)
		}
		again, err := encodeRelease(latest)
		if err != nil {
			t.Fatalf("a release read cannot be written again: %v", err)
		}
		back, err := decodeRelease("again", again)
		if err != nil || back.Phase != latest.Phase || back.Stack != latest.Stack {
			t.Fatalf("written again, it reads back as %+v, %v", back, err)
		}
	})
}
