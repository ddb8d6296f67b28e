//go:build !unix

package terraform

import "context"

// lockFile is a no-op where advisory locks are not available: the in-process
// locks still keep one process's operations apart.
func lockFile(context.Context, string) (func(), error) { return func() {}, nil }
