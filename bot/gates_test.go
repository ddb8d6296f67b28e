package bot

import (
	"slices"
	"strings"
	"testing"

	"github.com/kusionpr/kusionpr/githubapi"
)

func TestMergeableStatesSetting(t *testing.T) {
	base := map[string]string{"KUSIONPR_WEBHOOK_SECRET": "s", "KUSIONPR_APP_ID": "12", "KUSIONPR_APP_PRIVATE_KEY": testAppKey(t)}
	for _, tc := range []struct {
		name, value string
		want        []string
		wantErr     string
	}{
		{"default", "", []string{"clean"}, ""},
		{"unstable allowed", "clean, unstable", []string{"clean", "unstable"}, ""},
		{"has_hooks allowed", "clean,has_hooks", []string{"clean", "has_hooks"}, ""},
		{"behind is never accepted", "clean,behind", nil, `KUSIONPR_MERGEABLE_STATES: "behind" is not a state an apply may accept`},
		{"blocked is never accepted", "blocked", nil, `"blocked" is not a state`},
		{"nothing named", " , ", nil, "KUSIONPR_MERGEABLE_STATES is empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := map[string]string{}
			for k, v := range base {
				e[k] = v
			}
			e["KUSIONPR_MERGEABLE_STATES"] = tc.value
			c, err := LoadConfig(env(e))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(c.MergeableStates, tc.want) {
				t.Errorf("MergeableStates = %q, want %q", c.MergeableStates, tc.want)
			}
		})
	}
}

func TestMergeRefusal(t *testing.T) {
	yes, no := true, false
	for _, tc := range []struct {
		state     string
		mergeable *bool
		accepted  []string
		want      string // "" allowed
	}{
		{"clean", &yes, []string{"clean"}, ""},
		{"behind", &yes, []string{"clean"}, "the branch is behind `main`: update it first, an apply would revert what was merged since"},
		{"dirty", &no, []string{"clean"}, "the branch conflicts with `main`"},
		{"blocked", &yes, []string{"clean"}, "merging is blocked by a rule of `main`"},
		{"draft", &yes, []string{"clean"}, "the pull request is a draft"},
		{"unknown", nil, []string{"clean"}, "GitHub has not computed mergeability yet (after 30s it still answered mergeable null, mergeable_state `unknown`); comment `/kusion apply` again in a minute"},
		// mergeable null with a state: not computed, whatever the state says.
		{"clean", nil, []string{"clean"}, "GitHub has not computed mergeability yet (after 30s it still answered mergeable null, mergeable_state `clean`)"},
		{"unstable", &yes, []string{"clean"}, "mergeable_state unstable, which KUSIONPR_MERGEABLE_STATES does not accept"},
		{"unstable", &yes, []string{"clean", "unstable"}, ""},
		{"has_hooks", &yes, []string{"clean"}, "has_hooks, which KUSIONPR_MERGEABLE_STATES does not accept"},
		{"has_hooks", &yes, []string{"clean", "has_hooks"}, ""},
		{"something_new", &yes, []string{"clean"}, `its mergeable_state is "something_new"`},
	} {
		b := &Bot{cfg: &Config{MergeableStates: tc.accepted}}
		pr := &githubapi.PullRequestDetail{PullRequest: githubapi.PullRequest{BaseRef: "main"}, Mergeable: tc.mergeable, MergeableState: tc.state}
		got := b.mergeRefusal(pr)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s (mergeable %v, accepted %v): refusal %q, want %q", tc.state, tc.mergeable != nil, tc.accepted, got, tc.want)
		}
	}
}
