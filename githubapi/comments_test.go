package githubapi_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/kusionpr/kusionpr/githubapi"
	"github.com/kusionpr/kusionpr/internal/githubfake"
)

func TestPublishEditsInPlace(t *testing.T) {
	ctx := context.Background()
	gh := githubfake.New(t)
	c, err := githubapi.New("ghs_token", gh.URL, "octo", "infra", nil)
	if err != nil {
		t.Fatal(err)
	}
	key := "preview stack=apps/web workspace=default"
	parts := func(n int, text string) []string {
		var out []string
		for i := 1; i <= n; i++ {
			out = append(out, githubapi.Marker(key, i)+"\n"+text+strings.Repeat("x", 10))
		}
		return out
	}
	// Someone else's comment stays untouched throughout.
	other := githubapi.Marker("preview stack=apps/api workspace=default", 1) + "\nother"
	if _, err := c.Publish(ctx, 5, "preview stack=apps/api workspace=default", []string{other}); err != nil {
		t.Fatal(err)
	}

	urls, err := c.Publish(ctx, 5, key, parts(3, "first"))
	if err != nil || len(urls) != 3 {
		t.Fatalf("Publish = %v, %v", urls, err)
	}
	ids := map[int64]bool{}
	for _, cm := range gh.Comments("octo", "infra", 5) {
		ids[cm.ID] = true
	}
	// Fewer parts the second time: two edited in place, the third deleted.
	if _, err := c.Publish(ctx, 5, key, parts(2, "second")); err != nil {
		t.Fatal(err)
	}
	got := gh.Comments("octo", "infra", 5)
	if len(got) != 3 {
		t.Fatalf("%d comments, want the other one and two parts", len(got))
	}
	for _, cm := range got {
		if !ids[cm.ID] {
			t.Errorf("comment %d is new: parts must be edited in place", cm.ID)
		}
		if strings.Contains(cm.Body, "first") {
			t.Errorf("comment %d was not updated: %q", cm.ID, cm.Body)
		}
	}
	// Publishing the same text again changes nothing.
	before := len(gh.Calls())
	if _, err := c.Publish(ctx, 5, key, parts(2, "second")); err != nil {
		t.Fatal(err)
	}
	for _, call := range gh.Calls()[before:] {
		if call.Method != "GET" {
			t.Errorf("unchanged comments were written: %s %s", call.Method, call.Path)
		}
	}

	marked, err := c.MarkOutdated(ctx, 5, "preview", map[string]bool{key: true}, func(string) string { return "no longer touched." })
	if err != nil || len(marked) != 1 || marked[0] != "preview stack=apps/api workspace=default" {
		t.Fatalf("MarkOutdated = %v, %v", marked, err)
	}
	if _, err := c.MarkOutdated(ctx, 5, "preview", map[string]bool{key: true}, func(string) string { return "no longer touched." }); err != nil {
		t.Fatal(err)
	}
	var outdated int
	for _, cm := range gh.Comments("octo", "infra", 5) {
		outdated += strings.Count(cm.Body, "**Outdated**")
	}
	if outdated != 1 {
		t.Errorf("%d outdated notes, want exactly one (marking twice adds none)", outdated)
	}
	if _, err := c.Publish(ctx, 5, key, []string{"no marker"}); err == nil {
		t.Error("a part without its marker was published")
	}
}

// TestStrangersMarkersAreLeftAlone: anyone can start a comment with our
// marker; only comments our own user wrote are edited, marked outdated or
// deleted.
func TestStrangersMarkersAreLeftAlone(t *testing.T) {
	ctx := context.Background()
	gh := githubfake.New(t)
	c, err := githubapi.New("ghs_token", gh.URL, "octo", "infra", nil)
	if err != nil {
		t.Fatal(err)
	}
	key := "preview stack=apps/web workspace=default"
	gone := "preview stack=apps/gone workspace=default"
	var strangers []int64
	for _, body := range []string{
		githubapi.Marker(key, 1) + "\nmallory's first part",
		githubapi.Marker(key, 3) + "\nmallory's third part",
		githubapi.Marker(gone, 1) + "\na stack no longer touched",
	} {
		strangers = append(strangers, gh.PostComment("octo", "infra", 5, "mallory", body).ID)
	}
	// A comment of the App's, under another user than the token's.
	strangers = append(strangers, gh.PostComment("octo", "infra", 5, "other-app[bot]", githubapi.Marker(key, 2)+"\nx").ID)

	if _, err := c.Publish(ctx, 5, key, []string{githubapi.Marker(key, 1) + "\nours"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Publish(ctx, 5, key, []string{githubapi.Marker(key, 1) + "\nours, edited"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.MarkOutdated(ctx, 5, "preview", map[string]bool{key: true}, func(string) string { return "no longer touched." }); err != nil {
		t.Fatal(err)
	}
	touched := map[string]bool{}
	edits := 0
	for _, call := range gh.Calls() {
		if call.Method == "PATCH" || call.Method == "DELETE" {
			touched[call.Path] = true
			edits++
		}
	}
	for _, id := range strangers {
		if p := fmt.Sprintf("/repos/octo/infra/issues/comments/%d", id); touched[p] {
			t.Errorf("a stranger's comment was written to: %s", p)
		}
	}
	var ours []githubfake.Comment
	for _, cm := range gh.Comments("octo", "infra", 5) {
		if cm.User == githubapi.ActionsLogin {
			ours = append(ours, cm)
		}
	}
	if len(ours) != 1 || !strings.HasSuffix(ours[0].Body, "ours, edited") || edits != 1 {
		t.Errorf("own comments %+v after %d edits, want one, created then edited once", ours, edits)
	}

	// A token of another user (a personal access token) names its user.
	gh.SetTokenUser("ghp_octocat", "octocat")
	pat, _ := githubapi.New("ghp_octocat", gh.URL, "octo", "infra", nil)
	pat.WriteAs("octocat")
	if _, err := pat.Publish(ctx, 6, key, []string{githubapi.Marker(key, 1) + "\nfirst"}); err != nil {
		t.Fatal(err)
	}
	if _, err := pat.Publish(ctx, 6, key, []string{githubapi.Marker(key, 1) + "\nsecond"}); err != nil {
		t.Fatal(err)
	}
	if got := gh.Comments("octo", "infra", 6); len(got) != 1 || got[0].User != "octocat" || !strings.HasSuffix(got[0].Body, "second") {
		t.Errorf("comments of the personal token: %+v, want its one comment edited", got)
	}
}

// TestMarkerCannotEndItsComment: a folder name holding "-->" or a line
// break stays inside the hidden marker, and the comment is found again.
func TestMarkerCannotEndItsComment(t *testing.T) {
	ctx := context.Background()
	gh := githubfake.New(t)
	c, _ := githubapi.New("ghs_token", gh.URL, "octo", "infra", nil)
	key := "preview stack=a --> <!-- @org/team\n# x workspace=default"
	m := githubapi.Marker(key, 1)
	if strings.Count(m, "-->") != 1 || strings.Count(m, "<!--") != 1 || strings.Contains(m, "\n") || !strings.HasSuffix(m, " -->") {
		t.Fatalf("Marker(%q) = %q", key, m)
	}
	for _, text := range []string{"first", "second"} {
		if _, err := c.Publish(ctx, 7, key, []string{m + "\n" + text}); err != nil {
			t.Fatal(err)
		}
	}
	if got := gh.Comments("octo", "infra", 7); len(got) != 1 || !strings.HasSuffix(got[0].Body, "second") {
		t.Errorf("comments %+v, want the one comment found again and edited", got)
	}
	if marked, err := c.MarkOutdated(ctx, 7, "preview", map[string]bool{key: true}, func(string) string { return "x" }); err != nil || len(marked) != 0 {
		t.Errorf("MarkOutdated = %v, %v; the current stack's comment is not outdated", marked, err)
	}
}

// TestAppEditsOnlyItsBotsComments: an App's installation writes as
// "<slug>[bot]", the slug read from GET /app with the App's JWT; a comment
// with our marker by anyone else, another bot included, is left alone.
func TestAppEditsOnlyItsBotsComments(t *testing.T) {
	ctx := context.Background()
	gh := githubfake.New(t)
	app := testApp(t, gh, 99)
	gh.AddInstallationRepo(3, "octo", "infra")
	login, err := app.Login(ctx)
	if err != nil || login != gh.AppLogin() || !strings.HasSuffix(login, "[bot]") {
		t.Fatalf("Login = %q, %v; want %q", login, err, gh.AppLogin())
	}
	c, err := app.Installation(3, "octo", "infra")
	if err != nil {
		t.Fatal(err)
	}
	key1 := "preview stack=apps/web workspace=default"
	stranger := gh.PostComment("octo", "infra", 8, githubapi.ActionsLogin, githubapi.Marker(key1, 1)+"\nthe action's").ID
	for _, text := range []string{"first", "second"} {
		if _, err := c.Publish(ctx, 8, key1, []string{githubapi.Marker(key1, 1) + "\n" + text}); err != nil {
			t.Fatal(err)
		}
	}
	for _, call := range gh.Calls() {
		if call.Method == "PATCH" && strings.HasSuffix(call.Path, fmt.Sprintf("/comments/%d", stranger)) {
			t.Errorf("another bot's comment was edited")
		}
	}
	var own int
	for _, cm := range gh.Comments("octo", "infra", 8) {
		if cm.User == login {
			own++
			if !strings.HasSuffix(cm.Body, "second") {
				t.Errorf("own comment not edited: %q", cm.Body)
			}
		}
	}
	if own != 1 {
		t.Errorf("%d comments of %s, want 1", own, login)
	}
	gets := 0
	for _, call := range gh.Calls() {
		if call.Operation == "apps/get-authenticated" {
			gets++
		}
	}
	if gets != 1 {
		t.Errorf("GET /app asked %d times, want once (the login is kept)", gets)
	}
}

// TestCommentsListedOncePerRun: a run publishing many stacks reads the pull
// request's comments from GitHub once, not once per stack; a comment of
// ours deleted by someone meanwhile is posted again, and a part already
// gone is not an error.
func TestCommentsListedOncePerRun(t *testing.T) {
	ctx := context.Background()
	gh := githubfake.New(t)
	c, _ := githubapi.New("ghs_token", gh.URL, "octo", "infra", nil)
	// Three pages of comments: GitHub lists at most 100 at a time.
	for i := range 250 {
		gh.PostComment("octo", "infra", 8, "someone", fmt.Sprintf("comment %d", i))
	}
	keys := make([]string, 20)
	for i := range keys {
		keys[i] = fmt.Sprintf("preview stack=apps/s%02d workspace=default", i)
		if _, err := c.Publish(ctx, 8, keys[i], []string{githubapi.Marker(keys[i], 1) + "\nfirst", githubapi.Marker(keys[i], 2) + "\nmore"}); err != nil {
			t.Fatal(err)
		}
	}
	lists := func() (n int) {
		for _, call := range gh.Calls() {
			if call.Operation == "issues/list-comments" {
				n++
			}
		}
		return n
	}
	if n := lists(); n != 3 {
		t.Errorf("%d list requests for 20 stacks, want the 3 pages once", n)
	}

	// Someone deletes the first stack's comment and its second part (a
	// maintainer tidying up, with a client of their own).
	other, _ := githubapi.New("ghs_token", gh.URL, "octo", "infra", nil)
	if _, err := other.Publish(ctx, 8, keys[0], nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Publish(ctx, 8, keys[0], []string{githubapi.Marker(keys[0], 1) + "\nsecond"}); err != nil {
		t.Fatalf("publishing after the comment was deleted: %v", err)
	}
	var found []string
	for _, cm := range gh.Comments("octo", "infra", 8) {
		if strings.HasPrefix(cm.Body, githubapi.Marker(keys[0], 1)) {
			found = append(found, cm.Body)
		}
	}
	if len(found) != 1 || !strings.HasSuffix(found[0], "second") {
		t.Errorf("comments of the stack after someone deleted them: %q, want it posted again", found)
	}
	if n := lists(); n != 6 {
		t.Errorf("%d list requests, want 3 for each client", n)
	}
}
