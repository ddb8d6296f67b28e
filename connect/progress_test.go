package connect

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/kusionpr/kusionpr/runtime/kubernetes"
)

// TestLogProgress: the bot and the GitHub job log each object a wait is not
// done with as one info entry, its text quoted (a newline in a cluster's
// message cannot start a line of its own).
func TestLogProgress(t *testing.T) {
	for _, tc := range []struct {
		w    kubernetes.Waiting
		want string
	}{
		{kubernetes.Waiting{ID: "v1:PersistentVolumeClaim:ns:data", Reason: "Pending, not yet bound to a volume", Warning: "ProvisioningFailed: storageclass \"x\" not found\n::error::forged",
			Waited: 12500 * time.Millisecond, Timeout: 5 * time.Minute},
			`level=INFO msg=waiting id=v1:PersistentVolumeClaim:ns:data until=ready reason="Pending, not yet bound to a volume" waited=12s timeout=5m0s warning="ProvisioningFailed: storageclass \"x\" not found\n::error::forged"`},
		{kubernetes.Waiting{ID: "v1:Namespace:old", Gone: true, Reason: "still present", Timeout: time.Minute},
			`level=INFO msg=waiting id=v1:Namespace:old until=gone reason="still present" waited=0s timeout=1m0s`},
	} {
		var buf bytes.Buffer
		logProgress{slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		}}))}.Waiting(context.Background(), tc.w)
		if got := strings.TrimSuffix(buf.String(), "\n"); got != tc.want {
			t.Errorf("got  %s\nwant %s", got, tc.want)
		}
	}
}
