package backend

import (
	"context"
	"strings"
	"testing"

	"github.com/kusionpr/kusionpr/internal/testenv"
)

// TestAccessErrors: a missing bucket and bad credentials fail at Open, saying
// which and where, in the same words on every cloud.
func TestAccessErrors(t *testing.T) {
	ctx := context.Background()
	for _, os := range testenv.ObjectStores(t) {
		t.Run(os.Name, func(t *testing.T) {
			u := os.NewBucket(t) // sets the server's credentials
			scheme, rest, _ := strings.Cut(u, "://")
			bucket, query, _ := strings.Cut(rest, "?")
			missing := scheme + "://" + bucket + "-missing"
			if query != "" {
				missing += "?" + query
			}
			_, err := Open(ctx, missing)
			want := "open backend " + scheme + "://" + bucket + "-missing: bucket \"" + bucket + "-missing\" does not exist; create it, or fix the bucket name"
			if err == nil || err.Error() != want {
				t.Errorf("missing bucket:\n got %v\nwant %s", err, want)
			}

			switch os.Name {
			case "s3":
				t.Setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret")
			default:
				// The GCS emulator checks no credentials; gocloud's azblob
				// opener reads its key once per process.
				return
			}
			_, err = Open(ctx, u)
			want = "open backend " + scheme + "://" + bucket + ": access to bucket \"" + bucket + "\" denied: check the credentials and that they may read and write it"
			if err == nil || err.Error() != want {
				t.Errorf("bad credentials:\n got %v\nwant %s", err, want)
			}
		})
	}
}
