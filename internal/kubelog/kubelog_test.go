package kubelog

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/klog/v2"
)

// TestRoute: client-go's "Unhandled Error" (runtime.HandleError, as its
// discovery cache reports a failure it also returns) and klog's own lines
// reach the program's logger as debug records, and nothing of them is
// printed at info level.
func TestRoute(t *testing.T) {
	for _, tc := range []struct {
		level slog.Level
		want  []string // "" : nothing printed
	}{
		{slog.LevelInfo, nil},
		{slog.LevelDebug, []string{`level=DEBUG msg="Unhandled Error" klogLevel=ERROR`, `err="couldn't get current server API group list: refused"`, `level=DEBUG msg="from klog"`}},
	} {
		t.Run(tc.level.String(), func(t *testing.T) {
			var out bytes.Buffer
			Route(slog.New(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: tc.level})))
			t.Cleanup(klog.ClearLogger)
			utilruntime.HandleError(errors.New("couldn't get current server API group list: refused"))
			klog.ErrorS(nil, "from klog")
			klog.Flush()
			if len(tc.want) == 0 && out.Len() > 0 {
				t.Errorf("printed at %s:\n%s", tc.level, out.String())
			}
			for _, want := range tc.want {
				if !strings.Contains(out.String(), want) {
					t.Errorf("the log lacks %q:\n%s", want, out.String())
				}
			}
		})
	}
}
