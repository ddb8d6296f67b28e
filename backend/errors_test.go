package backend

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
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
			if os.Name == "postgres" {
				// postgres://user@host:port/database: the database is missing.
				pu, _ := url.Parse(missing)
				db := strings.TrimPrefix(pu.Path, "/")
				want = "open backend postgres://" + pu.Host + "/" + db + ": database \"" + db + "\" does not exist; create it, or fix the database name"
			}
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

// TestRefusalIsNeverMissing: an S3 server's refusal must not read as a
// missing bucket or object, whatever its request id says. gocloud's s3 driver
// calls any error whose text holds "301" NotFound; a MinIO answer's request
// and host ids are about 80 random hex digits, so about one refusal in fifty
// hit it. A refused read taken for a missing release could be written over;
// this server pins the id.
func TestRefusalIsNeverMissing(t *testing.T) {
	tests := []struct {
		name   string
		status int
		code   string
		want   string
	}{
		{"denied", http.StatusForbidden, "AccessDenied", `open backend s3://releases: access to bucket "releases" denied: check the credentials and that they may read and write it`},
		{"bad signature", http.StatusForbidden, "SignatureDoesNotMatch", `open backend s3://releases: access to bucket "releases" denied: check the credentials and that they may read and write it`},
		{"missing", http.StatusNotFound, "NoSuchBucket", `open backend s3://releases: bucket "releases" does not exist; create it, or fix the bucket name`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("x-amz-request-id", "1873013010301")
				w.Header().Set("Content-Type", "application/xml")
				w.WriteHeader(tt.status)
				fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>%s</Code><Message>refused</Message><RequestId>1873013010301</RequestId></Error>`, tt.code)
			}))
			defer srv.Close()
			t.Setenv("AWS_ACCESS_KEY_ID", "id")
			t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
			_, err := Open(context.Background(), "s3://releases?region=us-east-1&use_path_style=true&endpoint="+url.QueryEscape(srv.URL))
			if err == nil || err.Error() != tt.want {
				t.Errorf("got  %v\nwant %s", err, tt.want)
			}
		})
	}
}

// TestPostgresPasswordNeverPrinted: a password in the store's URL appears
// in no error, whether the database is missing, the URL is wrong or the
// server cannot be reached.
func TestPostgresPasswordNeverPrinted(t *testing.T) {
	u, err := url.Parse(testenv.Postgres(t).NewBucket(t))
	if err != nil {
		t.Fatal(err)
	}
	const password = "hunter2-pg-secret-0b7"
	u.User = url.UserPassword(u.User.Username(), password)
	missing, badOption, unreachable := *u, *u, *u
	missing.Path = "/no_such_database"
	badOption.RawQuery = "sslmode=bogus"
	unreachable.Host = testenv.FreeAddr(t)
	for _, c := range []struct {
		u    *url.URL
		says string
	}{{&missing, `database "no_such_database" does not exist`}, {&badOption, "sslmode is invalid"}, {&unreachable, "connection refused"}} {
		_, err := Open(context.Background(), c.u.String())
		if err == nil || strings.Contains(err.Error(), password) || strings.Contains(err.Error(), url.QueryEscape(password)) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("Open(%s with a password): %v; want it to say %q, not the password", c.u.Redacted(), err, c.says)
		}
	}
}
