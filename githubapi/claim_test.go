package githubapi_test

import (
	"context"
	"testing"

	"github.com/kusionpr/kusionpr/githubapi"
	"github.com/kusionpr/kusionpr/internal/githubfake"
)

// TestClaim: a comment is taken once, by whichever client reacts first;
// the comment's author reacting "eyes" takes nothing from the App.
func TestClaim(t *testing.T) {
	ctx := context.Background()
	gh := githubfake.New(t)
	c, err := githubapi.New("ghs_token", gh.URL, "octo", "infra", nil)
	if err != nil {
		t.Fatal(err)
	}
	gh.SetTokenUser("ghs_writer", "writer")
	author, err := githubapi.New("ghs_writer", gh.URL, "octo", "infra", nil)
	if err != nil {
		t.Fatal(err)
	}
	cm := gh.PostComment("octo", "infra", 5, "writer", "/kusion apply")
	if err := author.React(ctx, cm.ID, "eyes"); err != nil {
		t.Fatal(err)
	}
	for i, want := range []bool{true, false, false} {
		took, err := c.Claim(ctx, cm.ID)
		if err != nil || took != want {
			t.Fatalf("claim %d: %v, %v; want %v", i+1, took, err, want)
		}
	}
	if _, err := c.Claim(ctx, cm.ID+1000); err == nil {
		t.Error("a claim on a comment that does not exist succeeded")
	}
}
