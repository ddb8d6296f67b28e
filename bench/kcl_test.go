package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kusionpr/kusionpr/engine/kcl"
	"github.com/kusionpr/kusionpr/engine/kcl/deps"
	"github.com/kusionpr/kusionpr/engine/project"
	"github.com/kusionpr/kusionpr/internal/testenv"
)

// kclStacks are the stacks of testdata/kcl, a project in Kusion's shape:
// each main.k with its kcl.mod naming kam from git and service, network
// and mysql from OCI, which the test environment serves under Kusion's
// names.
var kclStacks = []string{"web", "api", "worker"}

// kclReference is the KCL runtime alone: a Python process of the same
// runtime that, for each line read, calls exec_program on the stacks with
// the options engine/kcl gives (those Kusion compiles with) and the
// packages' folders, and answers the time the calls took, measured around
// them alone, with the YAML's total size. Its arguments are built inside
// the timed part, as ours are built for each compile. With "once" it
// compiles the stacks a single time and exits: the cold reference, timed
// from outside as the process's whole run.
const kclReference = `
import json, sys, time
import kcl_lib.api as api
kcl = api.API()
req = json.loads(sys.stdin.readline())
def compile_all():
    size = 0
    for s in req["stacks"]:
        r = kcl.exec_program(api.ExecProgramArgs(
            work_dir=s, k_filename_list=[s + "/main.k"],
            external_pkgs=[api.ExternalPkg(pkg_name=n, pkg_path=p) for n, p in req["packages"]],
            disable_none=True, include_schema_type_path=True, sort_keys=False, error_format="sarif"))
        if r.err_message:
            raise SystemExit(r.err_message)
        size += len(r.yaml_result)
    return size
if req.get("once"):
    print(0, compile_all(), flush=True)
    raise SystemExit(0)
print("ready", flush=True)
for _ in sys.stdin:
    start = time.perf_counter()
    size = compile_all()
    took = time.perf_counter() - start
    print(took, size, flush=True)
`

// kclProject is testdata/kcl's stacks, loaded, with the settings that
// fetch their packages from the test environment.
type kclProject struct {
	runtime string
	root    string
	served  testenv.KCLServed
	stacks  []*project.Stack
}

func loadKCLProject(b *testing.B) *kclProject {
	b.Helper()
	p := &kclProject{runtime: testenv.KCLRuntime(b), served: testenv.KCLSettings(b)}
	var err error
	if p.root, err = filepath.Abs("testdata/kcl"); err != nil {
		b.Fatal(err)
	}
	for _, s := range kclStacks {
		st, err := project.LoadStack(p.root, filepath.Join(p.root, s))
		if err != nil {
			b.Fatal(err)
		}
		p.stacks = append(p.stacks, st)
	}
	return p
}

// compiler is ours as the action and the bot run it: dependencies fetched
// into cache (once), the runtime confined to the checkout and the cache.
func (p *kclProject) compiler(b *testing.B, cache string) *kcl.Stacks {
	b.Helper()
	res, err := deps.New(deps.Options{CacheDir: cache, Allow: p.served.Allow, Mirrors: p.served.Mirrors, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	return &kcl.Stacks{Compiler: kcl.Compiler{Runtime: p.runtime}, Resolver: res, Root: p.root}
}

// compileAll compiles the three stacks and returns the YAML's size.
func (p *kclProject) compileAll(b *testing.B, s *kcl.Stacks) int {
	b.Helper()
	size := 0
	for _, st := range p.stacks {
		out, err := s.Compile(context.Background(), st)
		if err != nil {
			b.Fatal(err)
		}
		size += len(out)
	}
	return size
}

// packages are the folders the stacks' dependencies were fetched into,
// as (name, folder) pairs for the reference.
func (p *kclProject) packages(b *testing.B, s *kcl.Stacks) [][2]string {
	b.Helper()
	pkgs, err := s.Resolver.Resolve(context.Background(), p.stacks[0].Path, p.root)
	if err != nil {
		b.Fatal(err)
	}
	var out [][2]string
	for _, pk := range pkgs {
		out = append(out, [2]string{pk.Name, pk.Dir})
	}
	return out
}

func (p *kclProject) stackDirs() []string {
	var dirs []string
	for _, st := range p.stacks {
		dirs = append(dirs, st.Path)
	}
	return dirs
}

// BenchmarkCompileKCL compiles a three-stack KCL project warm: ours as
// the action and the bot compile (engine/kcl.Stacks: each stack's kcl.mod
// read and its dependencies found in the cache, the confined runtime
// already started, each stack a request through the pipe) against the KCL
// runtime alone on the same files and packages (exec_program in a started
// Python process, the calls alone timed, inside it). Same iterations,
// order rotated.
//
// Metric units: ours-s and kcl-s (the three stacks, median).
func BenchmarkCompileKCL(b *testing.B) {
	p := loadKCLProject(b)
	ours := p.compiler(b, b.TempDir())
	b.Cleanup(func() { ours.Close() })
	p.compileAll(b, ours) // fetch, start
	ref := startKCLReference(b, p.runtime, p.stackDirs(), p.packages(b, ours), false)

	oursSize, refSize := 0, 0
	c := &contenders{
		names: []string{"ours", "kcl"},
		// A compile takes milliseconds on a machine whose other core is
		// busy: enough samples for a median at make bench's 3x.
		repeat: map[string]int{"ours": 20, "kcl": 20},
		run: map[string]func(*testing.B, int) time.Duration{
			"ours": func(b *testing.B, _ int) time.Duration {
				start := time.Now()
				oursSize = p.compileAll(b, ours)
				return time.Since(start)
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

// BenchmarkCompileKCLCold compiles the same project cold: ours with an
// empty cache (the four packages fetched from the test environment's git
// server and registry, through its proxies) and no runtime started (its
// start, confined, included), ended after; against the KCL runtime alone
// started for the three stacks, their packages already on disk, timed as
// the process's whole run. The difference is what a first preview pays
// for its fetches and confinement.
//
// Metric units: ours-s and kcl-s (median), fetched (requests ours made to
// the package servers per run).
func BenchmarkCompileKCLCold(b *testing.B) {
	p := loadKCLProject(b)
	warm := p.compiler(b, b.TempDir())
	b.Cleanup(func() { warm.Close() })
	p.compileAll(b, warm)
	pkgs := p.packages(b, warm)
	var fetched []int64
	c := &contenders{
		names: []string{"ours", "kcl"},
		run: map[string]func(*testing.B, int) time.Duration{
			"ours": func(b *testing.B, _ int) time.Duration {
				before := p.served.Requests()
				start := time.Now()
				s := p.compiler(b, b.TempDir())
				p.compileAll(b, s)
				s.Close()
				took := time.Since(start)
				fetched = append(fetched, p.served.Requests()-before)
				return took
			},
			"kcl": func(b *testing.B, _ int) time.Duration {
				start := time.Now()
				startKCLReference(b, p.runtime, p.stackDirs(), pkgs, true)
				return time.Since(start)
			},
		},
	}
	c.measure(b)
	b.ReportMetric(float64(median64(fetched)), "fetched")
}

func median64(v []int64) int64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]int64{}, v...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

type kclRef struct {
	in  *bufio.Writer
	out *bufio.Scanner
}

// startKCLReference starts the reference on stacks with packages; once,
// it compiles them a single time and returns when the process has ended.
func startKCLReference(b *testing.B, runtime string, stacks []string, packages [][2]string, once bool) *kclRef {
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
	if !once {
		b.Cleanup(func() { stdin.Close(); cmd.Wait() })
	}
	r := &kclRef{in: bufio.NewWriter(stdin), out: bufio.NewScanner(stdout)}
	req, _ := json.Marshal(map[string]any{"stacks": stacks, "packages": packages, "once": once})
	fmt.Fprintf(r.in, "%s\n", req)
	r.in.Flush()
	if once {
		if !r.out.Scan() {
			b.Fatalf("the reference did not compile: %v", r.out.Err())
		}
		stdin.Close()
		if err := cmd.Wait(); err != nil {
			b.Fatal(err)
		}
		return r
	}
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
