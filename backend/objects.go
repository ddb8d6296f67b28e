package backend

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"
	"k8s.io/apimachinery/pkg/util/wait"
)

// objects is the handful of bucket operations the Store uses. It exists so
// tests can count requests, and so the local folder can get a create-only write
// that is atomic (fileblob's is not, see fileObjects).
type objects interface {
	// exists reports whether key holds an object.
	exists(ctx context.Context, key string) (bool, error)
	// read returns the whole object; a missing key gives an error wrapping
	// errObjectMissing, one larger than limit bytes an error wrapping
	// errObjectTooLarge, having read at most limit+1 bytes of it.
	read(ctx context.Context, key string, limit int64) ([]byte, error)
	// list returns the names (without prefix) of the objects directly under
	// prefix, which ends in "/".
	list(ctx context.Context, prefix string) ([]string, error)
	// write stores data under key in one piece: readers see the old object or
	// the new one, never a part. With createOnly it fails with an error
	// wrapping errObjectExists when key already holds an object.
	write(ctx context.Context, key string, data []byte, createOnly bool) error
	close() error
}

var (
	errObjectMissing  = errors.New("object does not exist")
	errObjectExists   = errors.New("object already exists")
	errObjectTooLarge = errors.New("over the size limit")
)

// bucketObjects implements objects over any gocloud.dev/blob bucket.
type bucketObjects struct{ b *blob.Bucket }

func (o bucketObjects) exists(ctx context.Context, key string) (bool, error) {
	var ok bool
	err := retry(ctx, func() (err error) {
		_, err = o.b.Attributes(ctx, key)
		ok = err == nil
		if missing(err) {
			err = nil
		}
		return err
	})
	return ok, err
}

func (o bucketObjects) read(ctx context.Context, key string, limit int64) ([]byte, error) {
	var data []byte
	err := retry(ctx, func() error {
		r, err := o.b.NewReader(ctx, key, nil)
		if err != nil {
			return err
		}
		defer r.Close()
		// The size the store states refuses a huge object before its body
		// is read; the limited read below holds even if the size lied.
		if size := r.Size(); size > limit {
			return fmt.Errorf("%w: %d bytes, more than %d", errObjectTooLarge, size, limit)
		}
		data, err = io.ReadAll(io.LimitReader(ctxReader{ctx, r}, limit+1))
		if err != nil {
			return err
		}
		if int64(len(data)) > limit {
			return fmt.Errorf("%w: more than %d bytes", errObjectTooLarge, limit)
		}
		return nil
	})
	if missing(err) {
		return nil, fmt.Errorf("%w: %v", errObjectMissing, err)
	}
	return data, err
}

// ctxReader stops reading when ctx ends: a local file or a slow stream
// does not look at the context between chunks by itself.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

func (o bucketObjects) list(ctx context.Context, prefix string) ([]string, error) {
	var names []string
	opts := &blob.ListOptions{Prefix: prefix, Delimiter: "/"}
	token := blob.FirstPageToken
	for {
		var page []*blob.ListObject
		var next []byte
		listPage := func() (err error) {
			page, next, err = o.b.ListPage(ctx, token, 1000, opts)
			return err
		}
		err := retry(ctx, listPage)
		if notFound(err) {
			// A folder listed while another runner writes: fileblob reads
			// the names, then each file's attributes, and a temporary
			// file renamed in between fails the whole page. Listed again
			// at once (3 more times at most), it is the release it became.
			err = retryWhile(ctx, wait.Backoff{Steps: 3}, notFound, listPage)
		}
		if err != nil {
			return nil, err
		}
		for _, obj := range page {
			if !obj.IsDir {
				names = append(names, strings.TrimPrefix(obj.Key, prefix))
			}
		}
		if len(next) == 0 {
			return names, nil
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		token = next
	}
}

func (o bucketObjects) write(ctx context.Context, key string, data []byte, createOnly bool) error {
	attempts := 0
	err := retry(ctx, func() error {
		attempts++
		// A create-only write goes through Upload: azureblob's streaming
		// writer panics when the condition refuses it (gocloud v0.47). Either
		// way one request stores the whole object or nothing.
		opts := &blob.WriterOptions{ContentType: "application/yaml", IfNotExist: createOnly}
		if createOnly {
			return o.b.Upload(ctx, key, bytes.NewReader(data), opts)
		}
		return o.b.WriteAll(ctx, key, data, opts)
	})
	if err == nil {
		return nil
	}
	// Drivers report a lost create-only race as FailedPrecondition (memblob,
	// fileblob, s3, gcs, azure alike).
	if createOnly && refusedCreate(err) {
		if attempts > 1 {
			// A retried create may have lost only to its own first try, whose
			// answer never arrived: then the object is ours.
			if got, rerr := o.read(ctx, key, int64(len(data))); rerr == nil && bytes.Equal(got, data) {
				return nil
			}
		}
		return fmt.Errorf("%w: %v", errObjectExists, err)
	}
	return err
}

func (o bucketObjects) close() error { return o.b.Close() }

// fileObjects is bucketObjects for a local folder, with its own create-only write.
//
// fileblob v0.45 implements IfNotExist as os.Stat then os.Rename, under a mutex
// that is new for every writer: two writers (goroutines or processes) can both
// see the slot free and the second rename silently replaces the first file.
// That would break the revision-slot lock, so create-only writes here go to a
// temporary file in the target folder that is then hard-linked to the final
// name: link(2) fails with EEXIST if the name exists, atomically, across
// processes, and the linked file is complete before it has its name.
type fileObjects struct {
	bucketObjects
	dir string // absolute root folder of the bucket
}

// path maps a key to its file. Keys are validated (see validName) so that
// fileblob's key escaping leaves them unchanged and both agree on the file.
func (o fileObjects) path(key string) string {
	return filepath.Join(o.dir, filepath.FromSlash(key))
}

func (o fileObjects) write(ctx context.Context, key string, data []byte, createOnly bool) error {
	if !createOnly {
		return o.bucketObjects.write(ctx, key, data, false)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	path := o.path(key)
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return err
	}
	tmp, err := createTemp(dir, filepath.Base(path))
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after a link, removes the temporary name only
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	err = os.Link(tmp.Name(), path)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, fs.ErrExist):
		return fmt.Errorf("%w: %s", errObjectExists, path)
	case linkUnsupported(err):
		// Some filesystems have no hard links; fileblob's check-then-rename is
		// the best left there (not safe against a concurrent writer).
		return o.bucketObjects.write(ctx, key, data, true)
	default:
		return err
	}
}

// createTemp makes a hidden temporary file next to the target, with the mode
// fileblob gives its files (0666 less the umask; os.CreateTemp would use 0600).
func createTemp(dir, base string) (*os.File, error) {
	for try := 0; ; try++ {
		var b [8]byte
		_, _ = rand.Read(b[:])
		name := filepath.Join(dir, "."+base+"."+hex.EncodeToString(b[:])+".tmp")
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o666)
		if errors.Is(err, fs.ErrExist) && try < 100 {
			continue
		}
		return f, err
	}
}

func linkUnsupported(err error) bool {
	return errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.ENOTSUP) ||
		errors.Is(err, syscall.EOPNOTSUPP) || errors.Is(err, syscall.ENOSYS) ||
		errors.Is(err, syscall.EMLINK)
}

// refusedCreate: the store kept an existing object from a create-only write.
// gocloud says FailedPrecondition, mostly: under contention MinIO's 412 has
// come back as NotFound, so the HTTP status decides too.
func refusedCreate(err error) bool {
	if gcerrors.Code(err) == gcerrors.FailedPrecondition {
		return true
	}
	s := httpStatus(err)
	return s == http.StatusPreconditionFailed || s == http.StatusConflict
}

// retry runs op again after errors a store calls transient (throttling,
// unavailability, a server error): 4 tries over about 1.5 seconds, each
// pause twice the last from 100 ms, plus up to half of it at random so that
// runners throttled together do not come back together. Anything else, or
// ctx ending, returns at once.
func retry(ctx context.Context, op func() error) error {
	return retryWhile(ctx, wait.Backoff{Duration: 100 * time.Millisecond, Factor: 2, Jitter: 0.5, Steps: 4}, transient, op)
}

// retryWhile runs op, pausing as b says, while it fails with an error again
// accepts, for b.Steps tries at most. It returns op's last error, not the
// wait's: the store's error says what failed. Only a ctx ended before the
// first try returns ctx's.
func retryWhile(ctx context.Context, b wait.Backoff, again func(error) bool, op func() error) error {
	var err error
	waited := wait.ExponentialBackoffWithContext(ctx, b, func(context.Context) (bool, error) {
		err = op()
		return err == nil || !again(err), nil
	})
	if err == nil {
		return waited
	}
	return err
}

func notFound(err error) bool { return gcerrors.Code(err) == gcerrors.NotFound }

// transient: throttled, a server error, or the connection failed on the way
// (gocloud calls those Unknown; a net.Error says which they are).
func transient(err error) bool {
	if status := httpStatus(err); status >= 500 || status == http.StatusTooManyRequests {
		return true
	}
	switch gcerrors.Code(err) {
	case gcerrors.ResourceExhausted, gcerrors.Internal:
		return true
	}
	if gcerrors.Code(err) != gcerrors.Unknown {
		return false
	}
	var op *net.OpError
	var ue *url.Error
	return errors.As(err, &op) || errors.As(err, &ue)
}
