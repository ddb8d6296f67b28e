package terraform

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/hashicorp/go-version"
	"github.com/hashicorp/terraform-exec/tfexec"
	tfjson "github.com/hashicorp/terraform-json"
)

const (
	configFile = "main.tf.json"
	stateFile  = "terraform.tfstate"
	planFile   = "tfplan"
	// lockFileName is Terraform's dependency lock file.
	lockFileName = ".terraform.lock.hcl"
	// initMarker records which providers the folder was initialised for.
	initMarker = ".terraform/kusionpr-init"
)

// minVersion is the oldest terraform or tofu with every flag exec passes
// (plan -json and -refresh-only).
var minVersion = version.Must(version.NewVersion("0.15.4"))

// workdir is the working folder of one resource. The folder is only a cache:
// every operation rewrites its configuration and its state from the release,
// so a fresh machine (or a deleted cache) continues where the release says.
type workdir struct {
	dir string
	// tf runs init and `providers schema`; binary and env the rest (exec).
	tf     *tfexec.Terraform
	binary string
	env    []string
	// planned: the folder holds a plan made from this very configuration
	// and state, so an apply may apply it instead of planning again.
	planned bool
}

// folders hands out working folders, one operation at a time per folder.
type folders struct {
	cfg Config

	mu    sync.Mutex
	locks map[string]*sync.Mutex
	// execs keeps one terraform-exec handle per folder: a handle asks the
	// binary its version once, a new one before its first command.
	execs map[string]*tfexec.Terraform
	// initMu serialises init: the plugin cache is not safe for concurrent
	// installs.
	initMu sync.Mutex
}

func newFolders(cfg Config) *folders {
	return &folders{cfg: cfg, locks: map[string]*sync.Mutex{}, execs: map[string]*tfexec.Terraform{}}
}

func (f *folders) lock(dir string) func() {
	f.mu.Lock()
	l, ok := f.locks[dir]
	if !ok {
		l = &sync.Mutex{}
		f.locks[dir] = l
	}
	f.mu.Unlock()
	l.Lock()
	return l.Unlock
}

// with runs fn in t's folder after writing its configuration and state.
// state nil means no state: the resource does not exist yet.
func (f *folders) with(ctx context.Context, key string, config, state []byte, fn func(w *workdir) error) error {
	sum := sha256.Sum256([]byte(f.cfg.Binary + "\x00" + key))
	dir := filepath.Join(f.cfg.CacheDir, "work", hex.EncodeToString(sum[:10]))
	unlock := f.lock(dir)
	defer unlock()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("working folder: %w", err)
	}
	release, err := lockFile(ctx, filepath.Join(dir, ".lock"))
	if err != nil {
		return fmt.Errorf("working folder: %w", err)
	}
	defer release()

	// A folder holding a plan of exactly these files is left as it is.
	planned := samePlan(dir, config, state)
	if !planned {
		if err := writeFiles(dir, config, state); err != nil {
			return err
		}
	}
	// The folder's lock is held: its handle is used by one command at a time.
	f.mu.Lock()
	tf := f.execs[dir]
	f.mu.Unlock()
	if tf == nil {
		var err error
		if tf, err = tfexec.NewTerraform(dir, f.cfg.Binary); err != nil {
			return fmt.Errorf("terraform: %w", err)
		}
		if err := tf.SetEnv(f.cfg.environ()); err != nil {
			return fmt.Errorf("terraform environment: %w", err)
		}
		f.mu.Lock()
		f.execs[dir] = tf
		f.mu.Unlock()
	}
	return fn(&workdir{dir: dir, tf: tf, binary: f.cfg.Binary, env: f.cfg.execEnviron(), planned: planned})
}

// writeFiles writes config and state (nil: none) into dir, and removes what
// an earlier command left: its state backup and its plan.
func writeFiles(dir string, config, state []byte) error {
	if err := writeFile(filepath.Join(dir, configFile), config); err != nil {
		return err
	}
	for _, name := range []string{stateFile, stateFile + ".backup", planFile} {
		if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("working folder: %w", err)
		}
	}
	if state != nil {
		return writeFile(filepath.Join(dir, stateFile), state)
	}
	return nil
}

// samePlan says whether dir holds a plan of exactly config and state: the
// files as a plan left them (a plan writes no state), and the plan.
func samePlan(dir string, config, state []byte) bool {
	if _, err := os.Stat(filepath.Join(dir, planFile)); err != nil {
		return false
	}
	if old, err := os.ReadFile(filepath.Join(dir, configFile)); err != nil || !bytes.Equal(old, config) {
		return false
	}
	old, err := os.ReadFile(filepath.Join(dir, stateFile))
	if state == nil {
		return errors.Is(err, fs.ErrNotExist)
	}
	return err == nil && bytes.Equal(old, state)
}

// run runs fn in the folder of key, with config and state written and the
// providers of providerKey installed.
func (f *folders) run(ctx context.Context, key, providerKey string, config, state []byte, fn func(w *workdir) error) error {
	return f.with(ctx, key, config, state, func(w *workdir) error {
		if err := f.init(ctx, w, providerKey); err != nil {
			return err
		}
		start := time.Now()
		err := fn(w)
		f.cfg.Logger.Debug("terraform", "folder", key, "took", time.Since(start), "failed", err != nil)
		return err
	})
}

// init installs the providers the configuration needs unless the folder was
// initialised for the same ones already.
func (f *folders) init(ctx context.Context, w *workdir, providerKey string) error {
	marker := filepath.Join(w.dir, initMarker)
	if b, err := os.ReadFile(marker); err == nil && string(b) == providerKey {
		return nil
	}
	f.initMu.Lock()
	defer f.initMu.Unlock()
	release, err := lockFile(ctx, filepath.Join(f.cfg.PluginCacheDir, ".lock"))
	if err != nil {
		return fmt.Errorf("plugin cache: %w", err)
	}
	defer release()
	// A folder initialised without a lock file installs the provider into
	// the plugin cache again, replacing the binary other folders are running
	// at that moment. With the lock file of an earlier init of the same
	// providers, init only links the cached copy.
	sum := sha256.Sum256([]byte(providerKey))
	shared := filepath.Join(f.cfg.CacheDir, "locks", hex.EncodeToString(sum[:10])+".hcl")
	own := filepath.Join(w.dir, lockFileName)
	if b, err := os.ReadFile(shared); err == nil {
		if err := writeFile(own, b); err != nil {
			return err
		}
	}
	start := time.Now()
	if err := w.tf.Init(ctx, tfexec.Upgrade(false)); err != nil {
		return fmt.Errorf("init: %w", err)
	}
	f.cfg.Logger.Debug("terraform init", "dir", w.dir, "took", time.Since(start))
	// Init asked the binary its version; the other commands do not ask.
	v, _, err := w.tf.Version(ctx, false)
	if err != nil {
		return fmt.Errorf("terraform version: %w", err)
	}
	if v.LessThan(minVersion) {
		return fmt.Errorf("%s is version %s: version %s or later is needed", f.cfg.Binary, v, minVersion)
	}
	if b, err := os.ReadFile(own); err == nil {
		if err := writeFile(shared, b); err != nil {
			return err
		}
	}
	return writeFile(marker, []byte(providerKey))
}

// plan plans (refreshOnly: refreshes) into the folder's plan file and
// reads the plan back. A failed plan returns Terraform's own account of it.
func (w *workdir) plan(ctx context.Context, refreshOnly bool) (*tfjson.Plan, error) {
	var diags diagnostics
	if err := w.planCmd(ctx, &diags, refreshOnly); err != nil {
		return nil, diags.or(err)
	}
	plan, err := w.showPlan(ctx)
	if err != nil {
		return nil, fmt.Errorf("show plan: %w", err)
	}
	return plan, nil
}

// rawState is the folder's state file, nil when Terraform wrote none.
func (w *workdir) rawState() ([]byte, error) {
	b, err := os.ReadFile(filepath.Join(w.dir, stateFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read state: %w", err)
	}
	return bytes.TrimSpace(b), nil
}

func writeFile(path string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("working folder: %w", err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		return fmt.Errorf("working folder: %w", err)
	}
	return nil
}
