package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kusionpr/kusionpr/engine/kcl"
	"github.com/kusionpr/kusionpr/internal/testenv"
)

// kclStacks are the stacks of testdata/kcl, each a main.k importing the
// schema package app (defaults, inheritance, check blocks).
var kclStacks = []string{"web", "api", "worker"}

// kclReference is the KCL runtime alone: a Python process of the same
// runtime that, for each line read, calls exec_program on the stacks with
// the options engine/kcl gives (those Kusion compiles with) and answers
// the time the calls took, measured around them alone, with the YAML's
// total size. Its arguments are built inside the timed part, as ours are
// built for each compile.
const kclReference = `
import json, sys, time
import kcl_lib.api as api
kcl = api.API()
req = json.loads(sys.stdin.readline())
print("ready", flush=True)
for _ in sys.stdin:
    size = 0
    start = time.perf_counter()
    for s in req["stacks"]:
        r = kcl.exec_program(api.ExecProgramArgs(
            work_dir=s, k_filename_list=[s + "/main.k"],
            external_pkgs=[api.ExternalPkg(pkg_name="app", pkg_path=req["package"])],
            disable_none=True, include_schema_type_path=True, sort_keys=False, error_format="sarif"))
        if r.err_message:
            raise SystemExit(r.err_message)
        size += len(r.yaml_result)
    took = time.perf_counter() - start
    print(took, size, flush=True)
`

// BenchmarkCompileKCL compiles a three-stack KCL project warm: ours (an
// engine/kcl Session whose process is started, each stack a Compile:
// the request, the runtime's call, the answer through the pipe) against
// the KCL runtime alone on the same files (exec_program in a started
// Python process, the calls alone timed, inside it). Same iterations,
// order rotated.
//
// Metric units: ours-s and kcl-s (the three stacks, median).
func BenchmarkCompileKCL(b *testing.B) {
	runtime := testenv.KCLRuntime(b)
	ctx := context.Background()
	dir, err := filepath.Abs("testdata/kcl")
	if err != nil {
		b.Fatal(err)
	}
	pkg := filepath.Join(dir, "app")
	var progs []kcl.Program
	var stacks []string
	for _, s := range kclStacks {
		stack := filepath.Join(dir, "stacks", s)
		stacks = append(stacks, stack)
		progs = append(progs, kcl.Program{WorkDir: stack, Files: []string{"main.k"}, Packages: []kcl.Package{{Name: "app", Path: pkg}}})
	}

	session, err := (&kcl.Compiler{Runtime: runtime}).Start(ctx)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { session.Close() })
	ref := startKCLReference(b, runtime, stacks, pkg)

	oursSize, refSize := 0, 0
	c := &contenders{
		names: []string{"ours", "kcl"},
		run: map[string]func(*testing.B, int) time.Duration{
			"ours": func(b *testing.B, _ int) time.Duration {
				start := time.Now()
				size := 0
				for _, p := range progs {
					out, err := session.Compile(ctx, p)
					if err != nil {
						b.Fatal(err)
					}
					size += len(out)
				}
				took := time.Since(start)
				oursSize = size
				return took
			},
			"kcl": func(b *testing.B, _ int) time.Duration {
				took, size := ref.run(b)
				refSize = size
				return took
			},
		},
	}
	c.measure(b)
	// The same work: the same YAML from both.
	if oursSize == 0 || oursSize != refSize {
		b.Fatalf("ours compiled %d bytes of YAML, the runtime alone %d", oursSize, refSize)
	}
}

type kclRef struct {
	in  *bufio.Writer
	out *bufio.Scanner
}

func startKCLReference(b *testing.B, runtime string, stacks []string, pkg string) *kclRef {
	b.Helper()
	cmd := exec.Command(filepath.Join(runtime, "bin", "python3"), "-I", "-B", "-X", "utf8", "-c", kclReference)
	cmd.Env = []string{}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { stdin.Close(); cmd.Wait() })
	r := &kclRef{in: bufio.NewWriter(stdin), out: bufio.NewScanner(stdout)}
	req, _ := json.Marshal(map[string]any{"stacks": stacks, "package": pkg})
	fmt.Fprintf(r.in, "%s\n", req)
	r.in.Flush()
	if !r.out.Scan() || r.out.Text() != "ready" {
		b.Fatalf("the reference did not start: %v", r.out.Err())
	}
	return r
}

// run has the reference compile the stacks once and returns the time its
// calls took, as it measured them, and the YAML's size.
func (r *kclRef) run(b *testing.B) (time.Duration, int) {
	b.Helper()
	r.in.WriteString("go\n")
	r.in.Flush()
	if !r.out.Scan() {
		b.Fatalf("the reference ended: %v", r.out.Err())
	}
	f := strings.Fields(r.out.Text())
	if len(f) != 2 {
		b.Fatalf("the reference said %q", r.out.Text())
	}
	secs, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		b.Fatal(err)
	}
	size, err := strconv.Atoi(f[1])
	if err != nil {
		b.Fatal(err)
	}
	return time.Duration(secs * float64(time.Second)), size
}
