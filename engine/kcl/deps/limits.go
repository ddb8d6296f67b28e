package deps

import (
	"fmt"
	"time"
)

// Limits bound what one fetch may take. A package is a few hundred KCL
// files at most; the bounds stop a hostile or broken source from filling
// the runner's disk or holding a job.
type Limits struct {
	// MaxBytes is the most bytes one package's files may hold in total.
	MaxBytes int64
	// MaxFiles is the most files, folders and links one package may hold.
	MaxFiles int
	// MaxFileBytes is the most bytes one file may hold.
	MaxFileBytes int64
	// FetchTimeout is the most time one fetch may take.
	FetchTimeout time.Duration
}

// DefaultLimits are generous for KCL packages (Kusion's catalog modules
// are tens of kilobytes) and small for a runner.
func DefaultLimits() Limits {
	return Limits{MaxBytes: 64 << 20, MaxFiles: 10000, MaxFileBytes: 16 << 20, FetchTimeout: 2 * time.Minute}
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	if l.MaxBytes <= 0 {
		l.MaxBytes = d.MaxBytes
	}
	if l.MaxFiles <= 0 {
		l.MaxFiles = d.MaxFiles
	}
	if l.MaxFileBytes <= 0 {
		l.MaxFileBytes = d.MaxFileBytes
	}
	if l.FetchTimeout <= 0 {
		l.FetchTimeout = d.FetchTimeout
	}
	return l
}

// The limits' names, as errors give them.
const (
	LimitBytes     = "total bytes"
	LimitFiles     = "file count"
	LimitFileBytes = "bytes per file"
	LimitTime      = "time per fetch"
)

// LimitError is a fetch stopped by one of Limits; Dependency is filled in
// by the resolver.
type LimitError struct {
	Limit      string
	Max        string
	Dependency string
	Source     string
}

func (e *LimitError) Error() string {
	s := fmt.Sprintf("the %s limit (%s) was exceeded", e.Limit, e.Max)
	if e.Dependency != "" {
		s = fmt.Sprintf("dependency %q (%s): %s", e.Dependency, e.Source, s)
	}
	return s
}
