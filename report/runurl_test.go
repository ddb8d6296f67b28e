package report

import (
	"strings"
	"testing"

	"github.com/kusionpr/kusionpr/engine"
)

// TestRunURLLinkedOnlyWhenPlain: the run a stack ran in is linked from its
// comment, and an address that could carry markup is not shown at all.
func TestRunURLLinkedOnlyWhenPlain(t *testing.T) {
	r, err := New()
	if err != nil {
		t.Fatal(err)
	}
	p := &engine.Preview{Project: "web", Stack: "dev", Workspace: "dev", ChangeSteps: map[string]*engine.Step{}}
	for _, tc := range []struct {
		url    string
		linked bool
	}{
		{"https://github.com/Codertocat/Hello-World/actions/runs/30433642", true},
		{"http://127.0.0.1:4242/o/r/actions/runs/7", true},
		{"", false},
		{"https://github.com/x)![img](http://evil/p.png", false},
		{"javascript:alert(1)", false},
		{"https://github.com/o/r/actions/runs/1 <b>", false},
	} {
		body, err := r.Comment(p, nil, CommentOptions{RunURL: tc.url})
		if err != nil {
			t.Fatal(err)
		}
		has := strings.Contains(body, "[the workflow run](")
		if has != tc.linked {
			t.Errorf("%q: linked %v, want %v:\n%s", tc.url, has, tc.linked, body)
		}
		if tc.linked && !strings.Contains(body, "]("+tc.url+")") {
			t.Errorf("%q: the link is not the run's:\n%s", tc.url, body)
		}
	}
}
