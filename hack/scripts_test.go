package hack

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kusionpr/kusionpr/internal/testenv"
)

// The scripts run here against a cache folder of the test's own
// (KUSIONPR_CACHE), with go and npm replaced by stubs on PATH: they never
// build from source, and never touch ~/.cache/kusionpr or what runs from it.

// stubGo stands for go: it answers go env GOOS and GOARCH and go mod
// download -json (with $STUB_MODULE as every module's folder); a build (-n
// aside) or an install writes each binary it is asked for slowly (a
// partial file first), records "build NAME" in $STUB_LOG and prints the
// package lines -v would. With STUB_REFUSE set it refuses any build.
const stubGo = `#!/usr/bin/env bash
set -euo pipefail
case "$1 ${2:-}" in
  "env GOOS") echo linux; exit 0 ;;
  "env GOARCH") echo amd64; exit 0 ;;
esac
if [ -n "${STUB_REFUSE:-}" ]; then echo "stub go: asked to build: go $*" >&2; exit 97; fi
write() { # FILE: a binary written as a compiler's output is, over time
  printf 'partial' >"$1"; sleep 0.3; printf 'complete %s\n' "$(basename "$1")" >"$1"; chmod +x "$1"
  echo "build $(basename "$1")" >>"$STUB_LOG"
}
cmd=$1; shift
case "$cmd" in
  mod)
    printf '{\n\t"Path": "%s",\n\t"Dir": "%s",\n\t"Sum": "h1:stub"\n}\n' "${@: -1}" "$STUB_MODULE" ;;
  build)
    out='' pkgs=() dry=''
    while [ $# -gt 0 ]; do
      case "$1" in
        -o) out=$2; shift ;;
        -ldflags) shift ;;
        -n) dry=1 ;;
        ./*) pkgs+=("$1") ;;
      esac
      shift
    done
    for p in "${pkgs[@]}"; do
      if [ -n "$dry" ]; then echo "/usr/lib/go/pkg/tool/linux_amd64/compile -o \$WORK/b001/_pkg_.a -p stub/${p#./}"; continue; fi
      echo "stub/${p#./}"
      case "$out" in */) write "$out$(basename "$p")" ;; *) write "$out" ;; esac
    done ;;
  install)
    mod=${@: -1}; mod=${mod%@*}
    echo "$mod"
    write "$GOBIN/$(basename "$mod")" ;;
  *) echo "stub go: $cmd not stubbed" >&2; exit 1 ;;
esac
`

// stubNpm stands for npm install: it makes node_modules/.bin/azurite-blob
// in the folder it runs in, slowly, and records "npm PACKAGES".
const stubNpm = `#!/usr/bin/env bash
set -euo pipefail
if [ -n "${STUB_REFUSE:-}" ]; then echo "stub npm: asked to install: npm $*" >&2; exit 97; fi
mkdir -p node_modules/.bin
printf 'partial' >node_modules/.bin/azurite-blob; sleep 0.3
printf '#!/bin/sh\n' >node_modules/.bin/azurite-blob; chmod +x node_modules/.bin/azurite-blob
pkgs=(); for a in "$@"; do case "$a" in install | -*) ;; *) pkgs+=("$a") ;; esac; done
echo "npm ${pkgs[*]}" >>"$STUB_LOG"
`

// stubs writes go, npm, etcd and kubectl stubs into a folder and returns
// it (etcd and kubectl are only looked for on PATH by a build), or only
// those named.
func stubs(t *testing.T, only ...string) string {
	t.Helper()
	dir := t.TempDir()
	for name, text := range map[string]string{
		"go": stubGo, "npm": stubNpm,
		"etcd": "#!/bin/sh\nexit 0\n", "kubectl": "#!/bin/sh\nexit 1\n",
	} {
		if len(only) > 0 && !slices.Contains(only, name) {
			continue
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// script is a run of one of the scripts, its output collected as it comes.
type script struct {
	cmd  *exec.Cmd
	out  testenv.LogBuffer
	done chan struct{}
	err  error
}

func (s *script) output() string { return s.out.String() }

// start runs bash NAME ARGS... from this folder with env added to ours.
func start(t *testing.T, env []string, name string, args ...string) *script {
	t.Helper()
	s := &script{done: make(chan struct{})}
	s.cmd = exec.Command("bash", append([]string{name}, args...)...)
	// (A script run by one holding the lock would not take it.)
	s.cmd.Env = append(append(os.Environ(), "KUSIONPR_CACHE_LOCKED="), env...)
	s.cmd.Stdout, s.cmd.Stderr = &s.out, &s.out
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { s.err = s.cmd.Wait(); close(s.done) }()
	t.Cleanup(func() {
		select {
		case <-s.done:
		default:
			s.cmd.Process.Kill()
			<-s.done
		}
	})
	return s
}

// wait waits for the script to end, failing the test if it fails or takes
// longer than limit.
func (s *script) wait(t *testing.T, limit time.Duration) {
	t.Helper()
	select {
	case <-s.done:
	case <-time.After(limit):
		t.Fatalf("%s did not end within %s; it printed:\n%s", s.cmd.Args, limit, s.output())
	}
	if s.err != nil {
		t.Fatalf("%s: %v; it printed:\n%s", s.cmd.Args, s.err, s.output())
	}
}

// waitFor waits until the script has printed something matching re.
func (s *script) waitFor(t *testing.T, re string, limit time.Duration) {
	t.Helper()
	r := regexp.MustCompile(re)
	for end := time.Now().Add(limit); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if r.MatchString(s.output()) {
			return
		}
	}
	t.Fatalf("%s printed nothing matching %q within %s:\n%s", s.cmd.Args, re, limit, s.output())
}

func (s *script) running() bool {
	select {
	case <-s.done:
		return false
	default:
		return true
	}
}

// holdLock takes the cache's lock as a script would, saying it is what.
func holdLock(t *testing.T, cache, what string) (release func()) {
	t.Helper()
	if err := os.MkdirAll(cache, 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(cache, "lock"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(f.Name(), fmt.Appendf(nil, "%d %s\n", os.Getpid(), what), 0o644); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	release = func() { once.Do(func() { f.Close() }) }
	t.Cleanup(release)
	return release
}

// lockFree says whether the cache's lock can be taken now.
func lockFree(t *testing.T, cache string) bool {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(cache, "lock"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil
}

// A script that builds into or starts from the cache waits while another
// holds its lock, saying so and naming the holder, says it again while it
// waits, and goes on once the lock is free.
func TestScriptWaitsForTheCacheLock(t *testing.T) {
	cache := t.TempDir()
	release := holdLock(t, cache, "hack/testenv.sh start-cluster (pid 1, run by `bash hack/demo.sh`) in /src/other since 10:00:00")
	env := []string{"KUSIONPR_CACHE=" + cache, "KUSIONPR_LOCK_EVERY=1", "PATH=" + stubs(t) + ":" + os.Getenv("PATH")}
	s := start(t, env, "testenv.sh", "stop")
	s.waitFor(t, `testenv: waiting for the lock on `+regexp.QuoteMeta(cache)+`, held by hack/testenv.sh start-cluster \(pid 1, run by .bash hack/demo.sh.\) in /src/other since 10:00:00\n`, 10*time.Second)
	s.waitFor(t, `still waiting for the lock on .* after 0m0[1-9]s, held by hack/testenv.sh start-cluster`, 10*time.Second)
	if !s.running() {
		t.Fatalf("stop ended while the lock was held:\n%s", s.output())
	}
	release()
	s.wait(t, 10*time.Second)
	if !strings.Contains(s.output(), "got the lock on "+cache) {
		t.Errorf("no word that it got the lock:\n%s", s.output())
	}
	// The lock names its last holder.
	b, _ := os.ReadFile(filepath.Join(cache, "lock"))
	if !regexp.MustCompile(`^\d+ hack/testenv.sh stop \(pid \d+`).Match(b) {
		t.Errorf("the lock file says %q", b)
	}
}

// Two builds into one cache at once, as make demo's and make test's, or two
// checkouts': the second waits for the first and finds everything built.
// Every binary is built once and is whole, and no temporary folder is left.
func TestConcurrentBuildsBuildEachOnce(t *testing.T) {
	cache, module, log := t.TempDir(), t.TempDir(), filepath.Join(t.TempDir(), "builds")
	if err := os.WriteFile(filepath.Join(module, "go.mod"), []byte("module k8s.io/kubernetes\n\nreplace k8s.io/api => ./staging/src/k8s.io/api\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := []string{"KUSIONPR_CACHE=" + cache, "PATH=" + stubs(t) + ":" + os.Getenv("PATH"), "STUB_MODULE=" + module, "STUB_LOG=" + log}
	a := start(t, env, "testenv.sh", "build")
	b := start(t, env, "testenv.sh", "build")
	a.wait(t, 2*time.Minute)
	b.wait(t, 2*time.Minute)

	builds, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, l := range strings.Split(strings.TrimSpace(string(builds)), "\n") {
		seen[l]++
	}
	for _, want := range []string{"build kube-apiserver", "build kube-controller-manager", "build kube-scheduler", "build kwok",
		"build tofu", "build terraform-provider-local", "build terraform-provider-time", "build minio", "build fake-gcs-server",
		"build registry", "build kclsources", "build cloudfake"} {
		if seen[want] != 1 {
			t.Errorf("%q: %d times, want once (all: %q)", want, seen[want], builds)
		}
	}
	if n := seen["npm azurite@3.37.0"] + seen["npm @octokit/openapi@23.0.2 @octokit/webhooks-examples@7.6.1"]; n != 2 {
		t.Errorf("npm installs: %q, want azurite's and the payloads' once each", builds)
	}
	waited := strings.Count(a.output()+b.output(), "testenv: waiting for the lock on "+cache+", held by hack/testenv.sh build (pid ")
	if waited != 1 {
		t.Errorf("%d of the two builds said they waited for the other, want 1:\n%s\n---\n%s", waited, a.output(), b.output())
	}

	bin := filepath.Join(cache, "testenv", "bin")
	for _, name := range []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok", "tofu", "minio", "fake-gcs-server", "registry", "kclsources", "cloudfake"} {
		if got, err := os.ReadFile(filepath.Join(bin, name)); err != nil || string(got) != "complete "+name+"\n" {
			t.Errorf("%s holds %q (%v), want what its build wrote whole", name, got, err)
		}
	}
	for _, reg := range []string{"registry.terraform.io", "registry.opentofu.org"} {
		p := filepath.Join(cache, "testenv", "terraform-mirror", reg, "hashicorp", "local", "1.4.0", "linux_amd64", "terraform-provider-local_v1.4.0")
		if got, err := os.ReadFile(p); err != nil || string(got) != "complete terraform-provider-local\n" {
			t.Errorf("%s holds %q (%v)", p, got, err)
		}
	}
	if _, err := os.Stat(filepath.Join(cache, "testenv", "src", "kubernetes", ".prepared")); err != nil {
		t.Errorf("the Kubernetes source was not prepared in place: %v", err)
	}
	if left, _ := filepath.Glob(filepath.Join(cache, "testenv", ".build.*")); len(left) > 0 {
		t.Errorf("temporary folders left: %q", left)
	}
	if !lockFree(t, cache) {
		t.Error("the lock is still held after both builds ended")
	}
	// The Kubernetes build counted its packages against go build -n's total.
	if !strings.Contains(a.output()+b.output(), "building kube-apiserver kube-controller-manager kube-scheduler v1.32.4: 3 packages to compile, then 3 to link") {
		t.Errorf("the Kubernetes build did not say what it will compile:\n%s\n---\n%s", a.output(), b.output())
	}
}

// procStart is a process's start time as /proc/PID/stat gives it.
func procStart(t *testing.T, pid int) string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+2:]))
	return f[19]
}

func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+2:]))
	return f[0] != "Z" && f[0] != "X"
}

// sleeper starts a copy of sleep named name, from dir, and returns it.
func sleeper(t *testing.T, dir, name string) *exec.Cmd {
	t.Helper()
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(sleep)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, 0o755); err != nil {
		t.Fatal(err)
	}
	c := exec.Command(p, "300")
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { c.Wait(); close(done) }()
	t.Cleanup(func() { c.Process.Kill(); <-done })
	return c
}

// stop stops a process it recorded only while that pid is still the
// process it started: an etcd running for something else keeps running,
// though its pid is in the record (a pid used again after the recorded
// process ended, and a record from before start times were kept).
func TestStopStopsOnlyWhatItStarted(t *testing.T) {
	cache := t.TempDir()
	run := filepath.Join(cache, "testenv", "run")
	bin := filepath.Join(cache, "testenv", "bin")
	for _, d := range []string{run, bin} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	ours := sleeper(t, bin, "kwok")
	outside := sleeper(t, t.TempDir(), "etcd")
	o := outside.Process.Pid
	var started int
	fmt.Sscan(procStart(t, o), &started)
	record := fmt.Sprintf("%d %s kwok\n%d %d etcd\n%d\n", ours.Process.Pid, procStart(t, ours.Process.Pid), o, started-1, o)
	if err := os.WriteFile(filepath.Join(run, "pids"), []byte(record), 0o644); err != nil {
		t.Fatal(err)
	}
	s := start(t, []string{"KUSIONPR_CACHE=" + cache, "PATH=" + stubs(t) + ":" + os.Getenv("PATH")}, "testenv.sh", "stop")
	s.wait(t, 30*time.Second)
	if !alive(o) {
		t.Fatalf("the etcd started by something else was stopped:\n%s", s.output())
	}
	for end := time.Now().Add(5 * time.Second); alive(ours.Process.Pid) && time.Now().Before(end); {
		time.Sleep(50 * time.Millisecond)
	}
	if alive(ours.Process.Pid) {
		t.Error("the server stop recorded and started is still running")
	}
	if _, err := os.Stat(filepath.Join(run, "pids")); !os.IsNotExist(err) {
		t.Errorf("the record is still there: %v", err)
	}
}

// No script stops a process by its name: pkill and killall stop whatever
// matches, another checkout's etcd or MinIO included.
func TestScriptsNeverStopByName(t *testing.T) {
	files, err := filepath.Glob("*.sh")
	if err != nil || len(files) == 0 {
		t.Fatal(files, err)
	}
	byName := regexp.MustCompile(`(^|[^A-Za-z_-])(pkill|killall)( |$)`)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, l := range strings.Split(string(b), "\n") {
			if code, _, _ := strings.Cut(l, "#"); byName.MatchString(code) {
				t.Errorf("%s:%d stops processes by name: %s", f, i+1, strings.TrimSpace(l))
			}
		}
	}
}

// make vet's and make test's long go commands go through hack/gosteps.sh,
// which reports while they run, not bare in the Makefile.
func TestLongGoStepsReport(t *testing.T) {
	b, err := os.ReadFile("../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	bare := regexp.MustCompile(`(?m)^\t.*\$\(GO\) (vet|test .*-fuzz)`)
	if m := bare.FindAll(b, -1); len(m) > 0 {
		t.Errorf("the Makefile runs these bare, silent for minutes on a cold build cache: %q", m)
	}
	for _, want := range []string{"bash hack/gosteps.sh vet", "bash hack/gosteps.sh compile-tests -race"} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("the Makefile lacks %q", want)
		}
	}
}

// stepsScript runs a bash script that sources steps.sh, with its log
// folder in a temporary one and steps reporting every second.
func stepsScript(t *testing.T, body string) *script {
	t.Helper()
	return start(t, []string{"STEP_EVERY=1"}, "-c", `set -euo pipefail; PREFIX=t; LOGS=`+t.TempDir()+`; . ./steps.sh; `+body)
}

// A step counts what a go command compiles against the total go -n listed:
// packages compiled with -v (a path alone on its line) or -x (the compile
// commands), and vet runs; a line comes every STEP_EVERY seconds while it
// runs, then its time and CPU time.
func TestStepCountsAgainstThePlan(t *testing.T) {
	const compile = `/usr/local/go/pkg/tool/linux_amd64/compile -o $WORK/b00%d/_pkg_.a -trimpath "$WORK/b00%[1]d=>" -p %s -lang=go1.26 -complete`
	var planned []string
	for i, p := range []string{"a/one", "a/two", "b/three", "main"} {
		planned = append(planned, fmt.Sprintf(compile, i+1, p))
	}
	planned = append(planned, `TERM='dumb' /usr/local/go/pkg/tool/linux_amd64/vet -unsafeptr=false $WORK/b001/vet.cfg`, "go: downloading example.com/m v1.0.0")
	dir := t.TempDir()
	for name, lines := range map[string][]string{"planned": planned, "ran": {planned[0], planned[2]}} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s := stepsScript(t, `
plan vet-plan cat `+dir+`/planned
echo "planned $PLAN_COMPILES compiles, $PLAN_VETS vet"
step vet sh -c 'cat `+dir+`/ran; sleep 2.5'
PLAN_COMPILES=4
step build sh -c 'echo a/one; echo b/three; sleep 2.5'
step after sh -c 'echo a/one; sleep 1.5'`)
	s.wait(t, 30*time.Second)
	out := s.output()
	for _, want := range []string{
		`planned 4 compiles, 1 vet\n`,
		`t: vet: 0m0\ds, 2 of 4 packages compiled, 0 of 1 vetted \(last b/three\)\n`,
		`t: build: 0m0\ds, 2 of 4 packages compiled \(last b/three\)\n`,
		// A plan counts for the one step after it.
		`t: after: 0m0\ds, 1 packages compiled \(last a/one\)\n`,
	} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
	if n := regexp.MustCompile(`t: vet: 0m0\ds, 2 of 4`).FindAllString(out, -1); len(n) < 2 {
		t.Errorf("a line a second while the step ran, got %d:\n%s", len(n), out)
	}
	if !regexp.MustCompile(`t: build: done in 0m0[2-4]s \(\d+\.\d CPU-minutes\)\n`).MatchString(out) {
		t.Errorf("no time and CPU time at the end:\n%s", out)
	}
}

// With --show a step's output comes as it is printed, and its progress
// line only after that long without any; a failed step shows its log's
// end without -v's package lines, and stops the script.
func TestStepShowsOutputAndFailures(t *testing.T) {
	s := stepsScript(t, `step --show fuzz sh -c 'echo "fuzz: elapsed: 0s"; sleep 3; echo "fuzz: elapsed: 3s"'`)
	s.waitFor(t, "fuzz: elapsed: 0s\n", 2500*time.Millisecond)
	if !s.running() {
		t.Fatalf("the step's first line came only when it ended:\n%s", s.output())
	}
	s.wait(t, 10*time.Second)
	if out := s.output(); !strings.Contains(out, "t: fuzz: 0m0") || !strings.Contains(out, "fuzz: elapsed: 3s\n") {
		t.Errorf("want a progress line in the 3 s without output, and every line shown:\n%s", out)
	}

	f := stepsScript(t, `step bad sh -c 'echo a/pkg; echo "x.go:1:2: broken"; exit 3'; echo went on`)
	<-f.done
	out := f.output()
	if f.err == nil || strings.Contains(out, "went on") {
		t.Errorf("a failed step did not stop the script (%v):\n%s", f.err, out)
	}
	if !strings.Contains(out, "x.go:1:2: broken\n") || strings.Contains(out, "a/pkg\n") || !regexp.MustCompile(`t: error: bad failed after 0m0\ds \(exit 3; full output in `).MatchString(out) {
		t.Errorf("want the error shown, the package line not, and why it stopped:\n%s", out)
	}
}

// builtCache is the cache make test built the environment in (as the
// scripts find it), or "" with the test skipped (failed under
// KUSIONPR_REQUIRE_TESTENV) when the environment was not built there.
func builtCache(t *testing.T) string {
	t.Helper()
	cache := os.Getenv("KUSIONPR_CACHE")
	if cache == "" {
		base := os.Getenv("XDG_CACHE_HOME")
		if base == "" {
			base = filepath.Join(os.Getenv("HOME"), ".cache")
		}
		cache = filepath.Join(base, "kusionpr")
	}
	var missing []string
	for _, p := range []string{"bin/kube-apiserver", "bin/kube-controller-manager", "bin/kube-scheduler", "bin/kwok", "bin/tofu",
		"bin/minio", "bin/fake-gcs-server", "bin/registry", "bin/kclsources", "bin/cloudfake", "azurite/node_modules/.bin/azurite-blob", "octokit/.installed", "terraform-mirror"} {
		if _, err := os.Stat(filepath.Join(cache, "testenv", p)); err != nil {
			missing = append(missing, p)
		}
	}
	for _, c := range []string{"etcd", "openssl", "curl", "python3"} {
		if _, err := exec.LookPath(c); err != nil {
			missing = append(missing, c)
		}
	}
	if len(missing) > 0 {
		why := fmt.Sprintf("the test environment is not built in %s (missing %s): hack/testenv.sh build", cache, strings.Join(missing, ", "))
		if os.Getenv("KUSIONPR_REQUIRE_TESTENV") != "" {
			t.Fatal(why)
		}
		t.Skip(why)
	}
	return cache
}

// The case, with the real servers: make demo's start-cluster and
// make test's start begin together from one cache while an etcd that
// something else started runs. The second waits for the first's lock;
// both pass and leave one environment, which a later start reuses and stop
// stops whole; the other etcd runs on throughout. The cache is the test's
// own, its binaries linked from the one make test built (go and npm are
// stubs that refuse to build), so the shared environment is not touched.
func TestDemoAndTestStartTogether(t *testing.T) {
	built := builtCache(t)
	cache := t.TempDir()
	envDir := filepath.Join(cache, "testenv")
	if err := os.MkdirAll(envDir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"bin", "tools", "terraform-mirror"} {
		if _, err := os.Stat(filepath.Join(built, "testenv", d)); err != nil {
			continue
		}
		if out, err := exec.Command("cp", "-as", filepath.Join(built, "testenv", d), envDir+"/").CombinedOutput(); err != nil {
			t.Fatalf("cp -as %s: %v\n%s", d, err, out)
		}
	}
	for _, d := range []string{"azurite", "octokit"} {
		if err := os.Symlink(filepath.Join(built, "testenv", d), filepath.Join(envDir, d)); err != nil {
			t.Fatal(err)
		}
	}
	// The KCL runtimes hack/kcl.sh installed, each folder linked (not the
	// folder holding them, where an install would make its temporary ones):
	// start keeps the one it wants.
	runtimes, _ := filepath.Glob(filepath.Join(built, "kcl", "[0-9a-f]*"))
	for _, r := range runtimes {
		if err := os.MkdirAll(filepath.Join(cache, "kcl"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(r, filepath.Join(cache, "kcl", filepath.Base(r))); err != nil {
			t.Fatal(err)
		}
	}
	env := []string{"KUSIONPR_CACHE=" + cache, "KUSIONPR_TESTENV_DIR=", "STUB_REFUSE=1", "PATH=" + stubs(t, "go", "npm") + ":" + os.Getenv("PATH")}
	t.Cleanup(func() {
		if out, err := exec.Command("bash", "-c", "export "+strings.Join(env, " ")+"; bash testenv.sh stop").CombinedOutput(); err != nil {
			t.Errorf("stop: %v\n%s", err, out)
		}
	})

	client, peer := "http://"+testenv.FreeAddr(t), "http://"+testenv.FreeAddr(t)
	outside := exec.Command("etcd", "--name", "outside", "--data-dir", t.TempDir(),
		"--listen-client-urls", client, "--advertise-client-urls", client,
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer, "--initial-cluster", "outside="+peer)
	if err := outside.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { outside.Wait(); close(exited) }()
	t.Cleanup(func() { outside.Process.Kill(); <-exited })

	demo := start(t, env, "testenv.sh", "start-cluster")
	test := start(t, env, "testenv.sh", "start")
	demo.wait(t, 4*time.Minute)
	test.wait(t, 4*time.Minute)
	both := demo.output() + "\n---\n" + test.output()
	if n := strings.Count(both, "testenv: waiting for the lock on "+cache+", held by hack/testenv.sh start"); n != 1 {
		t.Errorf("%d of the two said they waited for the other's lock, want 1:\n%s", n, both)
	}
	if !lockFree(t, cache) {
		t.Error("the lock is held once both ended: a server inherited it")
	}

	run := filepath.Join(envDir, "run")
	pids := readPids(t, run)
	var names []string
	for _, p := range pids {
		names = append(names, p.name)
		if !alive(p.pid) {
			t.Errorf("%s (pid %d) is not running", p.name, p.pid)
		}
	}
	if want := []string{"cloudfake", "etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok", "postgres", "minio", "fake-gcs-server", "azurite", "registry", "kclgit"}; !slices.Equal(names, want) {
		t.Errorf("servers recorded: %q, want one environment: %q", names, want)
	}
	if out, err := exec.Command("kubectl", "--kubeconfig", filepath.Join(run, "kubeconfig"), "get", "--raw", "/readyz").CombinedOutput(); err != nil {
		t.Errorf("the cluster is not ready: %v\n%s", err, out)
	}

	again := start(t, env, "testenv.sh", "start")
	again.wait(t, 2*time.Minute)
	if !strings.Contains(again.output(), "testenv: already running ("+filepath.Join(run, "kubeconfig")+", started from ") {
		t.Errorf("a later start did not say it reuses the environment:\n%s", again.output())
	}
	if now := readPids(t, run); !slices.Equal(now, pids) {
		t.Errorf("a later start changed the servers: %v, were %v", now, pids)
	}

	stop := start(t, env, "testenv.sh", "stop")
	stop.wait(t, time.Minute)
	for _, p := range pids {
		if alive(p.pid) {
			t.Errorf("%s (pid %d) still runs after stop", p.name, p.pid)
		}
	}
	if !alive(outside.Process.Pid) {
		t.Fatal("the etcd started by something else was stopped")
	}
	if c, err := net.DialTimeout("tcp", strings.TrimPrefix(client, "http://"), 5*time.Second); err != nil {
		t.Errorf("the etcd started by something else does not answer: %v", err)
	} else {
		c.Close()
	}
}

type server struct {
	pid         int
	start, name string
}

// readPids reads $RUN/pids: "PID START NAME" lines.
func readPids(t *testing.T, run string) []server {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(run, "pids"))
	if err != nil {
		t.Fatal(err)
	}
	var out []server
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var s server
		if _, err := fmt.Sscan(l, &s.pid, &s.start, &s.name); err != nil {
			t.Fatalf("pids line %q: %v", l, err)
		}
		out = append(out, s)
	}
	return out
}

// TestFuzzCoordinatorDeadlineOnly: the fuzz step lets pass a run whose only
// failure is Go 1.26's coordinator missing its own -fuzztime deadline
// (go.dev/issue/75804), and only that: a failing input, or the target's
// own message beside the deadline, still fails make test.
func TestFuzzCoordinatorDeadlineOnly(t *testing.T) {
	tests := []struct {
		name string
		log  string
		want bool
	}{
		{"the coordinator's deadline alone", "fuzz: elapsed: 15s, execs: 374 (0/sec)\n--- FAIL: FuzzX (16.07s)\n    context deadline exceeded\nFAIL\nexit status 1\n", true},
		{"a failing input", "--- FAIL: FuzzX (3.01s)\n    --- FAIL: FuzzX (0.00s)\n        x_test.go:70: boom\n    Failing input written to testdata/fuzz/FuzzX/abc\nFAIL\n", false},
		{"the target's own deadline message", "--- FAIL: FuzzX (16.00s)\n    context deadline exceeded\n    x_test.go:70: Latest ran to its deadline\nFAIL\n", false},
		{"a panic", "panic: runtime error: index out of range\n--- FAIL: FuzzX (0.10s)\nFAIL\n", false},
	}
	fn, err := exec.Command("sed", "-n", "/^coordinator_deadline()/,/^}/p", "gosteps.sh").Output()
	if err != nil || !bytes.Contains(fn, []byte("coordinator_deadline()")) {
		t.Fatalf("coordinator_deadline not found in gosteps.sh: %v", err)
	}
	for _, tt := range tests {
		logf := filepath.Join(t.TempDir(), "fuzz.log")
		if err := os.WriteFile(logf, []byte(tt.log), 0o600); err != nil {
			t.Fatal(err)
		}
		err := exec.Command("bash", "-c", string(fn)+"\ncoordinator_deadline \"$1\"", "bash", logf).Run()
		if got := err == nil; got != tt.want {
			t.Errorf("%s: taken for the coordinator's deadline = %v, want %v", tt.name, got, tt.want)
		}
	}
}
