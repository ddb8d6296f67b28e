package main

import (
	"context"
	"fmt"
	"io"
	"sync"

	"github.com/kusionpr/kusionpr/model"
	"github.com/kusionpr/kusionpr/runtime/kubernetes"
)

// waitPrinter writes a line for each object a wait is not done with, on
// stderr whatever the output format: stdout holds the document. Its writer
// is a lineWriter shared with the log, since waits and log lines come from
// parallel walks.
type waitPrinter struct {
	w io.Writer
}

func (p *waitPrinter) Waiting(_ context.Context, w kubernetes.Waiting) {
	fmt.Fprintln(p.w, model.MaskFingerprints(w.String()))
}

// lineWriter serialises writes to one stream: the log handler, progress
// lines and messages all write whole lines to stderr from parallel
// goroutines, and each fmt or slog call is one Write.
type lineWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lineWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// shared wraps w in a lineWriter unless it is one already.
func shared(w io.Writer) io.Writer {
	if _, ok := w.(*lineWriter); ok {
		return w
	}
	return &lineWriter{w: w}
}
