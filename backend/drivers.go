package backend

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"google.golang.org/api/googleapi"

	"gocloud.dev/blob/gcsblob"
	"gocloud.dev/gcerrors"
	"gocloud.dev/gcp"
	"golang.org/x/oauth2/google"

	// Remote stores, opened by URL: s3:// (AWS and S3-compatible), gs://,
	// azblob://; oss:// goes through the S3 driver (openS3).
	_ "gocloud.dev/blob/azureblob"
	_ "gocloud.dev/blob/s3blob"
)

// openGCSWithCredentials opens gs:// with Kusion's inline service-account
// credentials (configs.credentials, the key file's JSON as an object).
func openGCSWithCredentials(ctx context.Context, u *url.URL, creds any) (*Store, error) {
	where := location(u)
	prefix, err := cleanPrefix(u.Query().Get("prefix"))
	if err != nil {
		return nil, fmt.Errorf("open backend %s: %w", where, err)
	}
	raw, err := json.Marshal(creds)
	if err != nil {
		return nil, fmt.Errorf("open backend %s: credentials: %w", where, err)
	}
	c, err := google.CredentialsFromJSON(ctx, raw, "https://www.googleapis.com/auth/devstorage.read_write")
	if err != nil {
		// The JSON holds a private key: say what is wrong, not what it holds.
		return nil, fmt.Errorf("open backend %s: credentials are not a Google service-account key", where)
	}
	client, err := gcp.NewHTTPClient(gcp.DefaultTransport(), c.TokenSource)
	if err != nil {
		return nil, fmt.Errorf("open backend %s: %w", where, err)
	}
	b, err := gcsblob.OpenBucket(ctx, client, u.Host, nil)
	if err != nil {
		return nil, fmt.Errorf("open backend %s: %w", where, err)
	}
	return checked(ctx, &Store{bucket: b, obj: bucketObjects{b}, prefix: prefix}, where, u.Host)
}

// describeAccessError turns a driver's refusal into what the user must fix.
// The driver's own words are left out: they vary by cloud and may quote
// request signatures.
func describeAccessError(err error, bucket string) error {
	if gcerrors.Code(err) == gcerrors.PermissionDenied || deniedStatus(err) {
		return fmt.Errorf("access to bucket %q denied: check the credentials and that they may read and write it", bucket)
	}
	return err
}

// deniedStatus finds an HTTP 401 or 403 under err: S3-compatible servers
// and Azure answer bad credentials so, which gocloud reports as Unknown.
func deniedStatus(err error) bool {
	status := httpStatus(err)
	return status == http.StatusUnauthorized || status == http.StatusForbidden
}

// missing reports whether err says the bucket or object is not there.
// gocloud's s3 driver calls any error whose text holds "301" NotFound (meant
// for AWS's redirect of a bucket in another region), and request ids are
// random hex: a refused request would now and then read as a missing object.
// The HTTP status, when there is one, decides.
func missing(err error) bool {
	if err == nil {
		return false
	}
	switch httpStatus(err) {
	case 0:
		return gcerrors.Code(err) == gcerrors.NotFound
	case http.StatusNotFound, http.StatusMovedPermanently:
		return true
	}
	return false
}

// httpStatus is the status of the HTTP answer under err, 0 if none.
func httpStatus(err error) int {
	var aws interface{ HTTPStatusCode() int }
	var az *azcore.ResponseError
	var g *googleapi.Error
	switch {
	case errors.As(err, &aws):
		return aws.HTTPStatusCode()
	case errors.As(err, &az):
		return az.StatusCode
	case errors.As(err, &g):
		return g.Code
	}
	return 0
}
