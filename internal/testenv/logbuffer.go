package testenv

import (
	"strings"
	"sync"
)

// LogBuffer collects what a process or a logger writes from goroutines of
// its own (a child's stderr pipe, a plugin client) while the test reads it.
type LogBuffer struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (l *LogBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *LogBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}
