package main

import "golang.org/x/sys/unix"

// undumpable keeps processes of the bot's own user out of its /proc entries.
// Unsetting the secrets hides them from children's environments, but the
// kernel keeps the environment the process started with in
// /proc/<pid>/environ, readable, with /proc/<pid>/mem, by any process of the
// same user: Terraform, a provider, a module binary. A process that is not
// dumpable has those entries owned by root. Children are dumpable again
// after exec, as usual.
func undumpable() error {
	return unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
}
