package workflow

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/kusionpr/kusionpr/githubapi"
	"github.com/kusionpr/kusionpr/internal/mdsafe"
	"github.com/kusionpr/kusionpr/model"
)

// reportPair is one result shown twice on a pull request: as a comment and as a
// check run. Each of the two says when GitHub refused the other, so that a
// refused request never leaves a result with nothing visible.
type reportPair struct {
	// key names the comment; body is its text, starting with its marker,
	// and split cuts it into comments.
	key   string
	body  string
	split func(body string) []string
	// comment: the comment is published (the check run always is, on a
	// commit).
	comment bool
	check   githubapi.Check
	// of names what is reported, in errors ("stack apps/web", "the pull
	// request"); this and shown say it in the notes ("this stack", "this
	// pull request"; "this stack", "these stacks").
	of, this, shown string
}

// pairReported is what became of a reportPair.
type pairReported struct {
	urls []string
	// err joins what GitHub refused; unreported: it refused both.
	err        error
	unreported bool
}

// publish posts r's comment and sets its check run, each noting the other's
// refusal.
func (c *Change) publish(ctx context.Context, log *slog.Logger, r reportPair) pairReported {
	var out pairReported
	var commentErr, checkErr error
	if c.Number > 0 && r.comment {
		urls, err := c.GitHub.Publish(ctx, c.Number, r.key, r.split(r.body))
		if err != nil {
			log.Error("publishing the comment failed", "error", err)
			commentErr = fmt.Errorf("posting the comment of %s: %w", r.of, err)
		}
		out.urls = urls
	}
	ck := r.check
	if commentErr != nil {
		ck.Conclusion = "failure"
		ck.Title = "comment not posted; " + ck.Title
		ck.Summary = withNote(ck.Summary, unreportedNote("The comment of "+r.this+" could not be posted", commentErr))
	}
	if len(out.urls) > 0 {
		ck.DetailsURL = out.urls[0]
	}
	checkSet := false
	if c.SHA != "" {
		if err := c.GitHub.SetCheck(ctx, c.SHA, ck); err != nil {
			log.Error("setting the check failed", "error", err)
			checkErr = fmt.Errorf("setting the check run %q: %w", ck.Name, err)
		} else {
			checkSet = true
		}
	}
	out.err = errors.Join(commentErr, checkErr)
	if checkErr != nil && len(out.urls) > 0 {
		// The comment is edited in place to say its check is missing:
		// the checks of the head would otherwise show nothing of it.
		note := unreportedNote("The check run "+mdsafe.Code(ck.Name)+" could not be set, so the pull request's checks do not show "+r.shown, checkErr)
		if urls, err := c.GitHub.Publish(ctx, c.Number, r.key, r.split(withNote(r.body, note))); err != nil {
			log.Error("noting the missing check in the comment failed", "error", err)
			out.err = errors.Join(out.err, fmt.Errorf("noting the missing check run in the comment of %s: %w", r.of, err))
		} else {
			out.urls = urls
		}
	}
	out.unreported = out.err != nil && len(out.urls) == 0 && !checkSet
	return out
}

// withNote puts note at the top of a report: under its first line when
// that is its hidden marker.
func withNote(body, note string) string {
	if marker, rest, ok := strings.Cut(body, "\n"); ok && strings.HasPrefix(marker, "<!--") {
		return marker + "\n" + note + rest
	}
	return note + body
}

// unreportedNote is a caution at the top of a report saying which of its
// two forms GitHub refused, and why.
func unreportedNote(what string, err error) string {
	return "> [!CAUTION]\n> " + what + ":\n\n" + mdsafe.Fence("text", model.MaskFingerprints(err.Error())) + "\n\n"
}
