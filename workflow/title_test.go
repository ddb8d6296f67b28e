package workflow

import (
	"errors"
	"testing"

	"github.com/kusionpr/kusionpr/engine"
)

// TestCheckTitleSaysIncomplete: the one line a check run shows never reads
// as a complete plan when resources could not be previewed.
func TestCheckTitleSaysIncomplete(t *testing.T) {
	readErr := errors.New("read v1:Secret:app:creds: connection refused\nmore")
	tests := []struct {
		name    string
		command Command
		so      StackOutcome
		want    string
	}{
		{name: "complete", command: Preview, so: StackOutcome{Summary: engine.Summary{Create: 1, UnChanged: 3}},
			want: "1 to create, 0 to update, 0 to delete, 3 unchanged, 0 drifted"},
		{name: "one of five failed", command: Preview,
			so:   StackOutcome{Summary: engine.Summary{Create: 1, UnChanged: 3, Errors: 1}, Err: readErr},
			want: "preview incomplete, 1 of 5 resources failed: read v1:Secret:app:creds: connection refused"},
		{name: "all failed", command: Preview,
			so:   StackOutcome{Summary: engine.Summary{Errors: 5}, Err: readErr},
			want: "preview incomplete, 5 of 5 resources failed: read v1:Secret:app:creds: connection refused"},
		{name: "stack error, no resource", command: Preview, so: StackOutcome{Err: errors.New("spec.yaml: resource 2: unknown type")},
			want: "preview failed: spec.yaml: resource 2: unknown type"},
		{name: "apply whose preview failed", command: Apply, so: StackOutcome{Summary: engine.Summary{Errors: 1}, Err: readErr},
			want: "apply failed: read v1:Secret:app:creds: connection refused"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := &Change{Command: tc.command}
			if got := c.title(&tc.so); got != tc.want {
				t.Errorf("title %q, want %q", got, tc.want)
			}
		})
	}
}
