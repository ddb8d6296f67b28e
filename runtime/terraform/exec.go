package terraform

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"time"

	tfjson "github.com/hashicorp/terraform-json"
)

// The commands every operation runs (plan, show, apply, destroy) are run
// here rather than through terraform-exec: a terraform-exec handle runs
// `terraform version -json` before its first command, to check the
// options it may pass, and that is a process start, about as long as the
// `show` of a small plan, in every process for every folder. The flags
// below are Terraform's and OpenTofu's since 1.0. Init and `providers
// schema`, once per folder or provider, still go through terraform-exec,
// and init refuses a binary older than these flags (minVersion).

// interruptWait is how long a cancelled command has, after an interrupt,
// to stop on its own (Terraform then writes what it applied to the state)
// before it is killed: terraform-exec's own default.
const interruptWait = 60 * time.Second

// exec runs terraform with args in the folder. stdout, if not nil, gets
// what it writes there. A failed command's error is its exit status, then
// what it wrote to stderr, as terraform-exec words it; one whose context
// ended wraps the context's error.
func (w *workdir) exec(ctx context.Context, stdout io.Writer, args ...string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, w.binary, args...)
	cmd.Dir = w.dir
	cmd.Env = w.env
	cmd.Stdout = stdout
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.SysProcAttr = procAttr()
	if runtime.GOOS != "windows" {
		cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	}
	// A provider Terraform started may keep the output pipes open after
	// Terraform itself ended: Wait gives up on them then.
	cmd.WaitDelay = interruptWait
	err := cmd.Run()
	if cerr := ctx.Err(); cerr != nil {
		return fmt.Errorf("terraform %s: %w (%v)", args[0], cerr, err)
	}
	if err != nil {
		return fmt.Errorf("%w\n%s", err, stderr.String())
	}
	return nil
}

// execEnviron is the environment of the commands run here: the configured one
// (Config.environ) with what terraform-exec sets for every command: a run
// in automation, Terraform's own logs off so that they cannot mix into the
// output read back.
func (c Config) execEnviron() []string {
	env := c.environ()
	env["TF_IN_AUTOMATION"] = "1"
	for _, k := range []string{"TF_LOG", "TF_LOG_CORE", "TF_LOG_PATH", "TF_LOG_PROVIDER"} {
		env[k] = ""
	}
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	return out
}

// planCmd plans into the folder's plan file, its machine-readable output
// to out.
func (w *workdir) planCmd(ctx context.Context, out io.Writer, refreshOnly bool) error {
	args := []string{"plan", "-no-color", "-input=false", "-lock-timeout=0s", "-out=" + planFile, "-json"}
	if refreshOnly {
		args = append(args, "-refresh-only")
	}
	return w.exec(ctx, out, args...)
}

// showPlan reads the folder's plan file as `show -json` prints it, numbers
// as json.Number as terraform-exec reads them.
func (w *workdir) showPlan(ctx context.Context) (*tfjson.Plan, error) {
	var out bytes.Buffer
	if err := w.exec(ctx, &out, "show", "-json", "-no-color", planFile); err != nil {
		return nil, err
	}
	var p tfjson.Plan
	p.UseJSONNumber(true)
	if err := json.Unmarshal(out.Bytes(), &p); err != nil {
		return nil, err
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return &p, nil
}

// showState reads a state file as `show -json` prints it.
func (w *workdir) showState(ctx context.Context, path string) (*tfjson.State, error) {
	var out bytes.Buffer
	if err := w.exec(ctx, &out, "show", "-json", "-no-color", path); err != nil {
		return nil, err
	}
	var s tfjson.State
	s.UseJSONNumber(true)
	if err := json.Unmarshal(out.Bytes(), &s); err != nil {
		return nil, err
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return &s, nil
}

// applyCmd applies the saved plan plan, or, with plan empty, plans and
// applies the configuration, its machine-readable output to out.
func (w *workdir) applyCmd(ctx context.Context, out io.Writer, plan string) error {
	args := []string{"apply", "-no-color", "-auto-approve", "-input=false", "-lock-timeout=0s", "-json"}
	if plan != "" {
		args = append(args, plan)
	}
	return w.exec(ctx, out, args...)
}

// destroyCmd destroys what the state holds; with out, its machine-readable
// output goes there, else Terraform's own words are in the error.
func (w *workdir) destroyCmd(ctx context.Context, out io.Writer) error {
	args := []string{"destroy", "-no-color", "-auto-approve", "-input=false", "-lock-timeout=0s"}
	if out != nil {
		args = append(args, "-json")
	}
	return w.exec(ctx, out, args...)
}
