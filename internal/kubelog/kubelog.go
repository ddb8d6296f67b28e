// Package kubelog sends client-go's own logging (klog, and through it
// k8s.io/apimachinery's runtime.HandleError, the "Unhandled Error" lines)
// to a program's slog logger, at debug level.
//
// client-go logs what it cannot return: a discovery that failed is logged
// by its memory cache (memcache.go) and then returned to the caller, who
// reports it again. Printed on stderr in klog's format, a user read each
// failure three times, in a shape unlike the rest of the output. As debug
// records of the program's logger they show only when asked for, in its
// format; the error each resource reports is the one a user reads.
//
// klog's logger is the process's: only a main calls Route, once.
package kubelog

import (
	"context"
	"log/slog"

	"k8s.io/klog/v2"
)

// Route makes log's handler the destination of every klog record, each
// lowered to debug level.
func Route(log *slog.Logger) {
	klog.SetSlogLogger(slog.New(debugOnly{log.Handler()}))
}

// debugOnly passes records to h at debug level.
type debugOnly struct{ h slog.Handler }

func (d debugOnly) Enabled(ctx context.Context, _ slog.Level) bool {
	return d.h.Enabled(ctx, slog.LevelDebug)
}

func (d debugOnly) Handle(ctx context.Context, r slog.Record) error {
	// logr hands errors over without asking Enabled first.
	if !d.h.Enabled(ctx, slog.LevelDebug) {
		return nil
	}
	if r.Level > slog.LevelDebug {
		out := slog.NewRecord(r.Time, slog.LevelDebug, r.Message, r.PC)
		out.AddAttrs(slog.String("klogLevel", r.Level.String()))
		r.Attrs(func(a slog.Attr) bool {
			out.AddAttrs(a)
			return true
		})
		r = out
	}
	return d.h.Handle(ctx, r)
}

func (d debugOnly) WithAttrs(attrs []slog.Attr) slog.Handler {
	return debugOnly{d.h.WithAttrs(attrs)}
}

func (d debugOnly) WithGroup(name string) slog.Handler {
	return debugOnly{d.h.WithGroup(name)}
}
