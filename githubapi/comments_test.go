package githubapi_test

import (
	"context"
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

	marked, err := c.MarkOutdated(ctx, 5, "preview", map[string]bool{key: true}, "no longer touched.")
	if err != nil || len(marked) != 1 || marked[0] != "preview stack=apps/api workspace=default" {
		t.Fatalf("MarkOutdated = %v, %v", marked, err)
	}
	if _, err := c.MarkOutdated(ctx, 5, "preview", map[string]bool{key: true}, "no longer touched."); err != nil {
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
