package githubapi

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/google/go-github/v60/github"

	"github.com/kusionpr/kusionpr/internal/mdsafe"
)

// A comment of ours starts with a hidden marker naming what it is about, so
// the next run finds and edits it instead of adding another:
//
//	<!-- kusionpr:preview project=web stack=dev workspace=default -->
//	<!-- kusionpr:preview project=web stack=dev workspace=default part=2 -->
var markerLine = regexp.MustCompile(`^<!-- kusionpr:(.+?)(?: part=(\d+))? -->`)

// Marker is the hidden first line of part (1-based) of the comment about
// key. The key's values should be mdsafe.CommentValue's already (a folder
// name is the repository's); whatever could still end the HTML comment or
// break the line is percent-encoded here, as markerKey says.
func Marker(key string, part int) string {
	key = markerKey(key)
	if part <= 1 {
		return "<!-- kusionpr:" + key + " -->"
	}
	return fmt.Sprintf("<!-- kusionpr:%s part=%d -->", key, part)
}

// markerKey is key as its Marker writes it, and as parseMarker reads it back.
func markerKey(key string) string { return mdsafe.CommentText(key) }

// parseMarker reads the key and part of a comment body; ok is false for
// comments not ours.
func parseMarker(body string) (key string, part int, ok bool) {
	m := markerLine.FindStringSubmatch(body)
	if m == nil {
		return "", 0, false
	}
	part = 1
	if m[2] != "" {
		part, _ = strconv.Atoi(m[2])
	}
	return m[1], part, true
}

type comment struct {
	id        int64
	body, url string
	key       string
	part      int
}

// ours lists the issue's comments that carry a marker and that the
// client's own user wrote. Anyone can start a comment with our marker; a
// stranger's is never edited, marked outdated or deleted.
//
// The list is read from GitHub once per client and issue, then kept up to
// date by the client's own writes: a run publishing 200 stacks would
// otherwise read every page of the pull request's comments 200 times. A
// client lives for one run (one action step, one bot job); only its own
// writes change its comments meanwhile, and a comment someone deleted is
// created again (Publish).
func (c *Client) ours(ctx context.Context, issue int) ([]comment, error) {
	c.commentsMu.Lock()
	defer c.commentsMu.Unlock()
	if cs, ok := c.listed[issue]; ok {
		return slices.Clone(cs), nil
	}
	cs, err := c.listOurs(ctx, issue)
	if err != nil {
		return nil, err
	}
	if c.listed == nil {
		c.listed = map[int][]comment{}
	}
	c.listed[issue] = cs
	return slices.Clone(cs), nil
}

// remember records a write of the client's own in its list of issue's
// comments: cm replaces the comment of its id, or is added; a deleted
// comment is dropped.
func (c *Client) remember(issue int, cm comment, deleted bool) {
	c.commentsMu.Lock()
	defer c.commentsMu.Unlock()
	cs := slices.DeleteFunc(c.listed[issue], func(o comment) bool { return o.id == cm.id })
	if !deleted {
		cs = append(cs, cm)
	}
	c.listed[issue] = cs
}

func (c *Client) listOurs(ctx context.Context, issue int) ([]comment, error) {
	if c.self == nil {
		return nil, fmt.Errorf("comments of #%d: the client does not know its own login", issue)
	}
	self, err := c.self(ctx)
	if err != nil {
		return nil, fmt.Errorf("comments of #%d: own login: %w", issue, err)
	}
	var out []comment
	err = eachPage(100, func(lo github.ListOptions) (*github.Response, bool, error) {
		cs, resp, err := c.gh.Issues.ListComments(ctx, c.owner, c.repo, issue, &github.IssueListCommentsOptions{ListOptions: lo})
		if err != nil {
			return nil, false, fmt.Errorf("list comments of #%d: %w", issue, err)
		}
		for _, ic := range cs {
			// Logins are case-insensitive on GitHub.
			if !strings.EqualFold(ic.GetUser().GetLogin(), self) {
				continue
			}
			if key, part, ok := parseMarker(ic.GetBody()); ok {
				out = append(out, comment{id: ic.GetID(), body: ic.GetBody(), url: ic.GetHTMLURL(), key: key, part: part})
			}
		}
		return resp, false, nil
	})
	return out, err
}

// Publish makes the comments about key on issue be exactly parts (each
// starting with its Marker): parts already there are edited in place when
// they changed, missing ones created, and parts left from a longer earlier
// version deleted. It returns the comments' URLs in order.
func (c *Client) Publish(ctx context.Context, issue int, key string, parts []string) ([]string, error) {
	existing, err := c.ours(ctx, issue)
	if err != nil {
		return nil, err
	}
	key = markerKey(key)
	byPart := map[int]comment{}
	for _, cm := range existing {
		if cm.key == key {
			if _, dup := byPart[cm.part]; !dup {
				byPart[cm.part] = cm
			}
		}
	}
	urls := make([]string, len(parts))
	for i, body := range parts {
		part := i + 1
		if !strings.HasPrefix(body, Marker(key, part)) {
			return nil, fmt.Errorf("comment part %d of %q does not start with its marker", part, key)
		}
		if cm, ok := byPart[part]; ok {
			urls[i] = cm.url
			if cm.body == body {
				continue
			}
			_, resp, err := c.gh.Issues.EditComment(ctx, c.owner, c.repo, cm.id, &github.IssueComment{Body: github.String(body)})
			if err == nil {
				cm.body = body
				c.remember(issue, cm, false)
				continue
			}
			if resp == nil || resp.StatusCode != http.StatusNotFound {
				return nil, fmt.Errorf("edit comment %d on #%d: %w", cm.id, issue, err)
			}
			// Deleted since it was listed: posted again below.
			c.remember(issue, cm, true)
		}
		ic, _, err := c.gh.Issues.CreateComment(ctx, c.owner, c.repo, issue, &github.IssueComment{Body: github.String(body)})
		if err != nil {
			return nil, fmt.Errorf("comment on #%d: %w", issue, err)
		}
		urls[i] = ic.GetHTMLURL()
		c.remember(issue, comment{id: ic.GetID(), body: body, url: ic.GetHTMLURL(), key: key, part: part}, false)
	}
	for part, cm := range byPart {
		if part > len(parts) {
			if err := c.deleteComment(ctx, issue, cm); err != nil {
				return nil, err
			}
		}
	}
	return urls, nil
}

// deleteComment deletes one of the client's comments; one already gone is
// as good.
func (c *Client) deleteComment(ctx context.Context, issue int, cm comment) error {
	resp, err := c.gh.Issues.DeleteComment(ctx, c.owner, c.repo, cm.id)
	if err != nil && (resp == nil || resp.StatusCode != http.StatusNotFound) {
		return fmt.Errorf("delete comment %d on #%d: %w", cm.id, issue, err)
	}
	c.remember(issue, cm, true)
	return nil
}

// MaxCommentLength is the most characters GitHub takes in a comment body.
const MaxCommentLength = 65536

// MaxStepSummary keeps a job summary under GitHub's 1 MiB per step.
const MaxStepSummary = 1000 * 1000

// outdatedNote is inserted under the marker of a comment whose stack the
// pull request no longer touches.
const outdatedNote = "> [!NOTE]\n> **Outdated**: "

// MarkOutdated marks the comments of kind ("preview") whose key is not in
// current as outdated, with why(key) (key as its Marker writes it), and
// deletes their continuation parts. It returns the keys it marked.
func (c *Client) MarkOutdated(ctx context.Context, issue int, kind string, current map[string]bool, why func(key string) string) ([]string, error) {
	existing, err := c.ours(ctx, issue)
	if err != nil {
		return nil, err
	}
	keep := make(map[string]bool, len(current))
	for k, v := range current {
		keep[markerKey(k)] = v
	}
	var marked []string
	for _, cm := range existing {
		if !strings.HasPrefix(cm.key, kind+" ") || keep[cm.key] {
			continue
		}
		if cm.part > 1 {
			if err := c.deleteComment(ctx, issue, cm); err != nil {
				return nil, err
			}
			continue
		}
		marker, rest, _ := strings.Cut(cm.body, "\n")
		if strings.HasPrefix(rest, outdatedNote) {
			continue
		}
		note := outdatedNote + why(cm.key)
		body := marker + "\n" + note + "\n\n" + rest
		if len([]rune(body)) > MaxCommentLength {
			body = marker + "\n" + note + "\n"
		}
		_, resp, err := c.gh.Issues.EditComment(ctx, c.owner, c.repo, cm.id, &github.IssueComment{Body: github.String(body)})
		switch {
		case err == nil:
			cm.body = body
			c.remember(issue, cm, false)
			marked = append(marked, cm.key)
		case resp != nil && resp.StatusCode == http.StatusNotFound:
			// Deleted since it was listed: nothing left to mark.
			c.remember(issue, cm, true)
		default:
			return nil, fmt.Errorf("edit comment %d on #%d: %w", cm.id, issue, err)
		}
	}
	return marked, nil
}
