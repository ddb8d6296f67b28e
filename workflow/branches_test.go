package workflow

import "testing"

// TestAppliesFrom: by default only the repository's default branch
// applies; a list names branches and patterns, @default standing for each
// repository's own.
func TestAppliesFrom(t *testing.T) {
	for _, tc := range []struct {
		branch, def string
		patterns    []string
		want        bool
	}{
		{"main", "main", nil, true},
		{"weak", "main", nil, false},
		{"", "", nil, false},
		{"master", "master", []string{"@default"}, true},
		{"main", "main", []string{"release/*"}, false},
		{"release/1.2", "main", []string{"@default", "release/*"}, true},
		{"release/1.2/x", "main", []string{"release/*"}, false},
		{"weak", "main", []string{"@default", "release/*"}, false},
		{"prod", "main", []string{"prod"}, true},
	} {
		if got := AppliesFrom(tc.branch, tc.def, tc.patterns); got != tc.want {
			t.Errorf("AppliesFrom(%q, %q, %q) = %v, want %v", tc.branch, tc.def, tc.patterns, got, tc.want)
		}
	}
	for _, bad := range []string{"[", "a b", "x:y", ""} {
		if err := CheckApplyBranches("KUSIONPR_APPLY_BRANCHES", []string{bad}); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if err := CheckApplyBranches("KUSIONPR_APPLY_BRANCHES", []string{"@default", "release/*", "prod"}); err != nil {
		t.Error(err)
	}
}
