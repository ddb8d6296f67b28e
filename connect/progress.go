package connect

import (
	"context"
	"log/slog"
	"time"

	"github.com/kusionpr/kusionpr/runtime/kubernetes"
)

// logProgress logs each object a wait is not done with, at info level:
// the bot's and the GitHub job's way of showing a long wait.
type logProgress struct{ log *slog.Logger }

func (p logProgress) Waiting(ctx context.Context, w kubernetes.Waiting) {
	until := "ready"
	if w.Gone {
		until = "gone"
	}
	attrs := []any{"id", w.ID, "until", until, "reason", w.Reason, "waited", w.Waited.Truncate(time.Second), "timeout", w.Timeout}
	if w.Warning != "" {
		attrs = append(attrs, "warning", w.Warning)
	}
	p.log.InfoContext(ctx, "waiting", attrs...)
}
