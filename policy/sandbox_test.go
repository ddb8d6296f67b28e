package policy_test

import (
	"os"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/kusionpr/kusionpr/engine"
	"github.com/kusionpr/kusionpr/internal/testenv"
	"github.com/kusionpr/kusionpr/model"
	"github.com/kusionpr/kusionpr/policy"
)

// testSandbox is a sandbox of testdata/sandbox, a program that serves
// one as the bot's and the action's mains do. Not this test binary: built
// with the race detector, as make test builds it, it could not start in a
// bounded data segment.
func testSandbox(t *testing.T, maxMemory int64) *policy.Sandbox {
	t.Helper()
	return &policy.Sandbox{Path: testenv.Binary(t, "./testdata/sandbox"), Args: []string{policy.SandboxArg}, MaxMemory: maxMemory}
}

// TestSandboxJudgesAsHere: the example policies judge a plan in a sandbox
// exactly as in this process: the same denials and warnings, the same
// error naming the file and line.
func TestSandboxJudgesAsHere(t *testing.T) {
	in := policy.Input{Project: "shop", Stack: "dev", Workspace: "dev", Dir: "apps/shop/dev", Preview: &engine.Preview{
		Project: "shop", Stack: "dev", Workspace: "dev", StepKeys: []string{"apps/v1:Deployment:shop:web"},
		ChangeSteps: map[string]*engine.Step{"apps/v1:Deployment:shop:web": {ID: "apps/v1:Deployment:shop:web", Action: engine.Create,
			To: &model.Resource{ID: "apps/v1:Deployment:shop:web", Type: model.Kubernetes, Attributes: map[string]any{
				"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "web", "namespace": "shop"},
				"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "web", "image": "nginx"}}}}},
			}}}}}}
	here, err := policy.Load(t.Context(), os.DirFS("../examples/policy"), policy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	want, err := here.Eval(t.Context(), in)
	if err != nil || len(want.Denies) == 0 {
		t.Fatalf("here: %+v, %v; want the limits rule to deny", want, err)
	}
	boxed, err := policy.Load(t.Context(), os.DirFS("../examples/policy"), policy.Options{Sandbox: testSandbox(t, 0)})
	if err != nil {
		t.Fatal(err)
	}
	got, err := boxed.Eval(t.Context(), in)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("in the sandbox: %+v, %v\nhere: %+v", got, err, want)
	}

	// A rule that fails at evaluation fails alike, naming its file.
	failing := fstest.MapFS{"bad.rego": {Data: []byte("package main\n\ndeny contains msg if {\n\tmsg := sprintf(\"%d\", [1 / 0])\n}\n")}}
	_, hereErr := mustLoad(t, failing, nil).Eval(t.Context(), in)
	_, boxErr := mustLoad(t, failing, testSandbox(t, 0)).Eval(t.Context(), in)
	if hereErr == nil || boxErr == nil || hereErr.Error() != boxErr.Error() || !strings.Contains(boxErr.Error(), "bad.rego:4") {
		t.Errorf("a failing rule: here %v, in the sandbox %v", hereErr, boxErr)
	}
}

func mustLoad(t *testing.T, fsys fstest.MapFS, sb *policy.Sandbox) *policy.Set {
	t.Helper()
	set, err := policy.Load(t.Context(), fsys, policy.Options{Sandbox: sb, Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// TestSandboxBoundsMemoryAndTime: rules building strings of a gigabyte
// with nested replace calls, whose one builtin call no cancellation
// interrupts, end at the sandbox's memory bound, this process's memory
// untouched; rules looping past their timeout end at it. Each refuses:
// an error, never a pass.
func TestSandboxBoundsMemoryAndTime(t *testing.T) {
	for _, tc := range []struct {
		name, rules, want string
	}{
		{"nested replace", `package main

s0 := concat("", ["xxxxxxxxxxxxxxxx" | some _ in numbers.range(1, 64)])

s1 := replace(s0, "x", s0)

s2 := replace(s1, "x", s0)

deny contains msg if {
	msg := sprintf("%d", [count(s2)])
}
`, "policy evaluation exceeded the memory bound of 128 MiB"},
		{"doubling concat", `package main

d(s) := concat("", [s, s])

deny contains msg if {
	s := d(d(d(d(d(d(d(d(d(d(d(d(d(d(d(d(d(d(d(d(d(d(d(d(d(d(d(d(d(d("x"))))))))))))))))))))))))))))))
	msg := sprintf("%d", [count(s)])
}
`, "policy evaluation exceeded the memory bound of 128 MiB"},
		{"a loop past its timeout", `package main

deny contains msg if {
	some a in numbers.range(1, 3000)
	some b in numbers.range(1, 3000)
	some c in numbers.range(1, 3000)
	a + b + c < 0
	msg := "never"
}
`, "exceeded the timeout of 2s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var before runtime.MemStats
			runtime.ReadMemStats(&before)
			set := mustLoad(t, fstest.MapFS{"bomb.rego": {Data: []byte(tc.rules)}}, testSandbox(t, 128<<20))
			res, err := set.Eval(t.Context(), policy.Input{Project: "p"})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("the rules gave %+v, %v; want an error saying %q", res, err, tc.want)
			}
			var after runtime.MemStats
			runtime.ReadMemStats(&after)
			if grown := int64(after.HeapSys) - int64(before.HeapSys); grown > 64<<20 {
				t.Errorf("this process's heap grew by %d MiB", grown>>20)
			}
		})
	}
}
