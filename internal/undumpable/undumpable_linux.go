// Package undumpable keeps processes of a program's own user out of its
// /proc entries. Unsetting the secrets a program started with hides them
// from its children's environments, but the kernel keeps the environment
// the process started with in /proc/<pid>/environ, readable, with
// /proc/<pid>/mem, by any process of the same user: Terraform, a
// provider, a module binary, a generator command. A process that is not
// dumpable has those entries owned by root. Children are dumpable again
// after exec, as usual.
package undumpable

import "golang.org/x/sys/unix"

// Set makes this process undumpable.
func Set() error {
	return unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
}
