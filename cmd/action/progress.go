package main

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/kusionpr/kusionpr/model"
	"github.com/kusionpr/kusionpr/runtime/kubernetes"
)

// waitPrinter writes a line for each object a wait is not done with, on
// stderr whatever the output format: stdout holds the document.
type waitPrinter struct {
	mu sync.Mutex // waits run in parallel; lines stay whole
	w  io.Writer
}

func (p *waitPrinter) Waiting(_ context.Context, w kubernetes.Waiting) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintln(p.w, model.MaskFingerprints(w.String()))
}

// checkTimeout accepts a readiness timeout: a positive duration.
func checkTimeout(d time.Duration) error {
	if d <= 0 {
		return fmt.Errorf("%s is not a positive duration: want one such as 90s or 10m (default %s)", d, "5m")
	}
	return nil
}
