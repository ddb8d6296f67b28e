package testenv

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/kusionpr/kusionpr/internal/storeserver"
)

// ObjectStore is one of the object-storage servers hack/testenv.sh starts.
type ObjectStore struct {
	Name string
	// NewBucket creates an empty bucket and returns its gocloud URL. It sets
	// the environment the driver reads its credentials from (t.Setenv), so
	// tests using it cannot run in parallel.
	NewBucket func(t testing.TB) string
}

// ObjectStores returns the stores of the test environment: S3 (MinIO),
// GCS (fake-gcs-server), Azure Blob (azurite) and PostgreSQL (a database
// per NewBucket).
func ObjectStores(t testing.TB) []ObjectStore {
	t.Helper()
	var out []ObjectStore
	for _, s := range []struct {
		name string
		env  []string
		make func(t testing.TB) string
	}{
		{"s3", []string{"KUSIONPR_TEST_S3_ENDPOINT", "KUSIONPR_TEST_S3_ACCESS_KEY", "KUSIONPR_TEST_S3_SECRET_KEY"}, s3Bucket},
		{"gcs", []string{"KUSIONPR_TEST_GCS_ENDPOINT"}, gcsBucket},
		{"azure", []string{"KUSIONPR_TEST_AZURE_ENDPOINT", "KUSIONPR_TEST_AZURE_ACCOUNT", "KUSIONPR_TEST_AZURE_KEY"}, azureBucket},
		{"postgres", []string{"KUSIONPR_TEST_POSTGRES_URL"}, postgresDatabase},
	} {
		ok := true
		for _, e := range s.env {
			if os.Getenv(e) == "" {
				ok = false
			}
		}
		if !ok {
			if os.Getenv("KUSIONPR_REQUIRE_TESTENV") != "" {
				t.Fatalf("%s is not set: run `make test` or `eval \"$(hack/testenv.sh env)\"` after `hack/testenv.sh start`", strings.Join(s.env, ", "))
			}
			continue
		}
		out = append(out, ObjectStore{Name: s.name, NewBucket: s.make})
	}
	return out
}

// S3 returns the S3 server, skipping (or failing under make test) without it.
func S3(t testing.TB) ObjectStore {
	t.Helper()
	return named(t, "s3", "KUSIONPR_TEST_S3_ENDPOINT")
}

// Postgres returns the PostgreSQL server, its NewBucket a fresh database,
// skipping (or failing under make test) without it.
func Postgres(t testing.TB) ObjectStore {
	t.Helper()
	return named(t, "postgres", "KUSIONPR_TEST_POSTGRES_URL")
}

// named is the store called name, which variable locates.
func named(t testing.TB, name, variable string) ObjectStore {
	t.Helper()
	for _, s := range ObjectStores(t) {
		if s.Name == name {
			return s
		}
	}
	missing(t, variable+" is not set: run `make test` or `eval \"$(hack/testenv.sh env)\"` after `hack/testenv.sh start`")
	return ObjectStore{}
}

func bucketName(prefix string) string {
	return fmt.Sprintf("%s-%08x", prefix, rand.Uint32())
}

// S3Credentials sets the S3 server's credentials where the AWS SDK reads them.
func S3Credentials(t testing.TB) {
	t.Setenv("AWS_ACCESS_KEY_ID", os.Getenv("KUSIONPR_TEST_S3_ACCESS_KEY"))
	t.Setenv("AWS_SECRET_ACCESS_KEY", os.Getenv("KUSIONPR_TEST_S3_SECRET_KEY"))
	t.Setenv("AWS_REGION", "us-east-1")
}

// S3URL is the gocloud URL of bucket on the test S3 server.
func S3URL(bucket string) string {
	q := url.Values{
		"endpoint":       {os.Getenv("KUSIONPR_TEST_S3_ENDPOINT")},
		"use_path_style": {"true"},
		"region":         {"us-east-1"},
		"disable_https":  {"true"},
	}
	return "s3://" + bucket + "?" + q.Encode()
}

func s3Bucket(t testing.TB) string {
	t.Helper()
	S3Credentials(t)
	client := s3.New(s3.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(os.Getenv("KUSIONPR_TEST_S3_ENDPOINT")),
		UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(
			os.Getenv("KUSIONPR_TEST_S3_ACCESS_KEY"), os.Getenv("KUSIONPR_TEST_S3_SECRET_KEY"), ""),
	})
	name := bucketName("kusionpr")
	if _, err := client.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String(name)}); err != nil {
		t.Fatalf("create S3 bucket %s: %v", name, err)
	}
	return S3URL(name)
}

func gcsBucket(t testing.TB) string {
	t.Helper()
	host := strings.TrimPrefix(strings.TrimPrefix(os.Getenv("KUSIONPR_TEST_GCS_ENDPOINT"), "http://"), "https://")
	t.Setenv("STORAGE_EMULATOR_HOST", host)
	name := bucketName("kusionpr")
	body, _ := json.Marshal(map[string]string{"name": name})
	// fake-gcs-server's JSON API creates buckets like GCS's.
	resp, err := http.Post("http://"+host+"/storage/v1/b?project=test", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatalf("create GCS bucket %s: %v", name, err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("create GCS bucket %s: %s", name, resp.Status)
	}
	return "gs://" + name
}

// AzureCredentials sets the azurite account where gocloud's azureblob reads it.
func AzureCredentials(t testing.TB) {
	t.Setenv("AZURE_STORAGE_ACCOUNT", os.Getenv("KUSIONPR_TEST_AZURE_ACCOUNT"))
	t.Setenv("AZURE_STORAGE_KEY", os.Getenv("KUSIONPR_TEST_AZURE_KEY"))
}

// AzureURL is the gocloud URL of container on azurite.
func AzureURL(container string) string {
	u, _ := url.Parse(os.Getenv("KUSIONPR_TEST_AZURE_ENDPOINT"))
	return "azblob://" + container + "?" + url.Values{"protocol": {u.Scheme}, "domain": {u.Host}}.Encode()
}

func azureBucket(t testing.TB) string {
	t.Helper()
	AzureCredentials(t)
	cred, err := azblob.NewSharedKeyCredential(os.Getenv("KUSIONPR_TEST_AZURE_ACCOUNT"), os.Getenv("KUSIONPR_TEST_AZURE_KEY"))
	if err != nil {
		t.Fatal(err)
	}
	client, err := azblob.NewClientWithSharedKeyCredential(os.Getenv("KUSIONPR_TEST_AZURE_ENDPOINT")+"/", cred, nil)
	if err != nil {
		t.Fatal(err)
	}
	name := bucketName("kusionpr")
	if _, err := client.CreateContainer(context.Background(), name, nil); err != nil {
		t.Fatalf("create Azure container %s: %v", name, err)
	}
	return AzureURL(name)
}

// ReleaseStores are the kinds of release store the race and crash suites
// run on: S3 (MinIO) for the object stores, PostgreSQL, and the HTTP store
// protocol served by a test server of it (internal/storeserver) that lives
// as long as the test. Every NewBucket is empty.
func ReleaseStores(t testing.TB) []ObjectStore {
	t.Helper()
	var out []ObjectStore
	for _, s := range ObjectStores(t) {
		if s.Name == "s3" || s.Name == "postgres" {
			out = append(out, s)
		}
	}
	return append(out, ObjectStore{Name: "http", NewBucket: HTTPStore})
}

// HTTPStore starts a server of the HTTP store protocol for the test and
// returns its store URL, under a path as a team's service would be.
func HTTPStore(t testing.TB) string {
	srv := httptest.NewServer(&storeserver.Server{})
	t.Cleanup(srv.Close)
	return srv.URL + "/stores/kusion"
}
