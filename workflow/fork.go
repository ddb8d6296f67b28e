package workflow

import "github.com/kusionpr/kusionpr/githubapi"

// Forks is what a run may do with a pull request's head, decided in one
// place for the action and the bot alike (DecideFork).
type Forks struct {
	// Fork: the head is another repository's, anyone's code.
	Fork bool
	// Offline: previewed against the prior release only, with none of the
	// cluster's or clouds' credentials (a Terraform plan runs providers,
	// a Kusion module runs code).
	Offline bool
	// MayApply: an apply may run it.
	MayApply bool
}

// DecideFork is the fork rule. A head from a fork (githubapi.PullRequest's
// Fork: another repository by id, or a deleted one) is never applied before
// its merge, and is previewed offline unless trusted: the operator trusts
// forks with its credentials (the action's allow-fork-credentials; the bot
// never does). Once merged, the code is the base repository's. pr nil (a
// push) is no fork.
func DecideFork(pr *githubapi.PullRequest, merged, trusted bool) Forks {
	if pr == nil || !pr.Fork() || merged {
		return Forks{MayApply: true}
	}
	return Forks{Fork: true, Offline: !trusted}
}
