package githubfake

import (
	"strings"
	"testing"
)

// recorder is a test the fake reports to, whose failures and cleanups the
// test of ExpectViolation reads rather than suffers.
type recorder struct {
	testing.TB
	errs     []string
	cleanups []func()
}

func (r *recorder) Helper()          {}
func (r *recorder) Cleanup(f func()) { r.cleanups = append(r.cleanups, f) }
func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, format)
}

// TestExpectViolation: a limit broken on purpose does not fail the test,
// one broken unexpectedly still does, and an expected refusal that never
// came fails it too, so a test cannot pass without the refusal it is about.
func TestExpectViolation(t *testing.T) {
	long := `{"body":"` + strings.Repeat("x", maxCommentLength+1) + `"}`
	for _, tc := range []struct {
		name    string
		expect  string
		sends   []string // bodies of comments posted, with a token
		noAuth  bool     // and one request without a token
		failure string   // a substring of the one failure; "" for none
	}{
		{"expected and made", "body is too long", []string{long}, false, ""},
		{"expected, never made", "body is too long", []string{`{"body":"short"}`}, false, "none came"},
		{"made unexpectedly", "", []string{long}, false, "broke GitHub's REST description"},
		{"another violation beside the expected one", "body is too long", []string{long}, true, "broke GitHub's REST description"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &recorder{TB: t}
			s := newServer(r, true, nil)
			if tc.expect != "" {
				s.ExpectViolation(tc.expect)
			}
			for _, b := range tc.sends {
				raw(t, s, "POST", "/repos/o/r/issues/1/comments", b, true)
			}
			if tc.noAuth {
				raw(t, s, "GET", "/repos/o/r/pulls/1", "", false)
			}
			for i := len(r.cleanups) - 1; i >= 0; i-- {
				r.cleanups[i]()
			}
			switch {
			case tc.failure == "" && len(r.errs) != 0:
				t.Errorf("the test failed: %q", r.errs)
			case tc.failure != "" && (len(r.errs) != 1 || !strings.Contains(r.errs[0], tc.failure)):
				t.Errorf("failures %q, want one with %q", r.errs, tc.failure)
			}
		})
	}
}
