package backend

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"gocloud.dev/blob"
	"gocloud.dev/blob/s3blob"
	"sigs.k8s.io/yaml"

	"github.com/kusionpr/kusionpr/internal/kusionhome"
)

// Config is Kusion's backend configuration, as `kusion config` keeps it in
// $KUSION_HOME/config.yaml: a type (local, oss, s3, google) and its configs,
// so a Kusion user's settings work here unchanged.
type Config struct {
	Type    string         `json:"type" yaml:"type"`
	Configs map[string]any `json:"configs,omitempty" yaml:"configs,omitempty"`
}

// KusionConfigFile is where the Kusion CLI keeps its configuration.
func KusionConfigFile() string {
	dir, err := kusionhome.Dir()
	if err != nil {
		dir = ".kusion"
	}
	return filepath.Join(dir, "config.yaml")
}

// CurrentKusionBackend reads a Kusion config file and returns the backend its
// backends.current names. ok is false when the file does not exist or names
// no current backend: the default local folder applies.
func CurrentKusionBackend(path string) (cfg Config, ok bool, err error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return Config{}, false, nil
	}
	if err != nil {
		return Config{}, false, fmt.Errorf("read Kusion config %s: %w", path, err)
	}
	var doc struct {
		Backends map[string]any `json:"backends"`
	}
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return Config{}, false, fmt.Errorf("read Kusion config %s: %w", path, err)
	}
	current, _ := doc.Backends["current"].(string)
	if current == "" {
		return Config{}, false, nil
	}
	raw, found := doc.Backends[current]
	if !found {
		return Config{}, false, fmt.Errorf("read Kusion config %s: backends.current is %q, but there is no backend of that name", path, current)
	}
	b, _ := yaml.Marshal(raw)
	if err := yaml.Unmarshal(b, &cfg); err != nil {
		return Config{}, false, fmt.Errorf("read Kusion config %s: backend %q: %w", path, current, err)
	}
	return cfg, true, nil
}

// OpenConfig opens the store a Kusion backend configuration describes.
// Credentials missing from configs come from each cloud's usual environment
// (AWS_ACCESS_KEY_ID..., OSS_ACCESS_KEY_ID and OSS_ACCESS_KEY_SECRET,
// GOOGLE_APPLICATION_CREDENTIALS) and ambient sources.
func OpenConfig(ctx context.Context, c Config) (*Store, error) {
	str := func(k string) string { s, _ := c.Configs[k].(string); return s }
	switch c.Type {
	case "", "local":
		p := str("path")
		if p == "" {
			return Open(ctx, DefaultURL())
		}
		abs, err := filepath.Abs(p)
		if err != nil {
			return nil, fmt.Errorf("open backend local %q: %w", p, err)
		}
		return Open(ctx, (&url.URL{Scheme: "file", Path: filepath.ToSlash(abs)}).String())
	case "s3", "oss":
		u := &url.URL{Scheme: c.Type, Host: str("bucket")}
		q := url.Values{}
		for _, k := range []string{"endpoint", "region", "prefix"} {
			if v := str(k); v != "" {
				q.Set(k, v)
			}
		}
		if v, ok := c.Configs["forcePathStyle"].(bool); ok {
			q.Set("use_path_style", strconv.FormatBool(v))
		}
		u.RawQuery = q.Encode()
		return openS3(ctx, u, s3Credentials{id: str("accessKeyID"), secret: str("accessKeySecret")})
	case "google":
		u := &url.URL{Scheme: "gs", Host: str("bucket")}
		if p := str("prefix"); p != "" {
			u.RawQuery = url.Values{"prefix": {p}}.Encode()
		}
		if creds, ok := c.Configs["credentials"]; ok && creds != nil {
			return openGCSWithCredentials(ctx, u, creds)
		}
		return Open(ctx, u.String())
	}
	return nil, fmt.Errorf("open backend: unknown type %q: want local, oss, s3 or google", c.Type)
}

type s3Credentials struct{ id, secret string }

// openS3 opens s3:// with static credentials, or oss:// (Alibaba Cloud OSS,
// through its S3-compatible API): the endpoint is required, and credentials
// default to OSS_ACCESS_KEY_ID and OSS_ACCESS_KEY_SECRET as in Kusion.
func openS3(ctx context.Context, u *url.URL, creds s3Credentials) (*Store, error) {
	where := location(u)
	q := u.Query()
	prefix, err := cleanPrefix(q.Get("prefix"))
	if err != nil {
		return nil, fmt.Errorf("open backend %s: %w", where, err)
	}
	if u.Host == "" {
		return nil, fmt.Errorf("open backend %s: the bucket is missing", where)
	}
	endpoint := q.Get("endpoint")
	region := q.Get("region")
	oss := u.Scheme == "oss"
	if oss {
		if endpoint == "" {
			return nil, fmt.Errorf("open backend %s: OSS needs its endpoint (for example oss-cn-hangzhou.aliyuncs.com)", where)
		}
		if creds.id == "" {
			creds = s3Credentials{id: os.Getenv("OSS_ACCESS_KEY_ID"), secret: os.Getenv("OSS_ACCESS_KEY_SECRET")}
		}
		if region == "" {
			// oss-cn-hangzhou.aliyuncs.com signs as oss-cn-hangzhou.
			host := strings.TrimPrefix(strings.TrimPrefix(endpoint, "https://"), "http://")
			region, _, _ = strings.Cut(host, ".")
		}
	}
	if endpoint != "" && !strings.Contains(endpoint, "://") {
		endpoint = "https://" + endpoint
	}
	// A custom endpoint is usually an S3-compatible server (MinIO and the
	// like) that wants path-style addressing; OSS wants virtual hosts.
	pathStyle := endpoint != "" && !oss
	if v := q.Get("use_path_style"); v != "" {
		pathStyle, _ = strconv.ParseBool(v)
	}
	opts := []func(*awsconfig.LoadOptions) error{}
	if region != "" {
		opts = append(opts, awsconfig.WithRegion(region))
	}
	if creds.id != "" {
		opts = append(opts, awsconfig.WithCredentialsProvider(credentials.NewStaticCredentialsProvider(creds.id, creds.secret, "")))
	}
	cfg, err := awsconfig.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("open backend %s: %w", where, err)
	}
	if cfg.Region == "" {
		cfg.Region = "us-east-1"
	}
	client := s3.NewFromConfig(cfg, func(o *s3.Options) {
		if endpoint != "" {
			o.BaseEndpoint = aws.String(endpoint)
		}
		o.UsePathStyle = pathStyle
	})
	b, err := s3blob.OpenBucket(ctx, client, u.Host, nil)
	if err != nil {
		return nil, fmt.Errorf("open backend %s: %w", where, err)
	}
	return checked(ctx, &Store{bucket: b, obj: bucketObjects{b}, prefix: prefix}, where, u.Host)
}

// Schemes are the release stores a backend URL may name, as listed in
// errors: gocloud's own list leaves out oss, which is ours (openS3).
const Schemes = "file, s3, gs, azblob, oss, postgres, https or mem"

// checkScheme refuses, with the form to write instead, a URL without a
// scheme (a folder given as a bare path is the usual one) or with a scheme
// no store answers to.
func checkScheme(rawURL string, u *url.URL) error {
	switch u.Scheme {
	case "file":
		// file://.kusion-demo names a host, not a folder: fileblob would
		// open the current folder's root. Only an absolute path says
		// which folder without depending on where the command runs.
		if (u.Host != "" && u.Host != "localhost") || u.Opaque != "" || !strings.HasPrefix(u.Path, "/") {
			rel := u.Opaque
			if rel == "" {
				rel = strings.TrimPrefix(u.Host+u.Path, "/")
			}
			return fmt.Errorf("open backend %q: a folder store needs an absolute path, so that every command opens the same folder wherever it runs: write %s", rawURL, folderURL(rel))
		}
		return nil
	case "s3", "gs", "azblob", "oss", "mem", "postgres", "postgresql", "https", "http":
		return nil
	case "":
		if u.Host == "" && u.Path != "" {
			return fmt.Errorf("open backend %q: not a URL: a folder is written %s; the stores are %s", rawURL, folderURL(u.Path), Schemes)
		}
		return fmt.Errorf("open backend %q: no scheme: want %s (a folder is file:///ABSOLUTE/PATH)", rawURL, Schemes)
	}
	return fmt.Errorf("open backend %s: unknown scheme %q: want %s (a folder is file:///ABSOLUTE/PATH)", location(u), u.Scheme, Schemes)
}

// folderURL is the file:// URL of the folder p, as the user would reach it
// from here: ~ is their home, a relative path is under the current folder.
func folderURL(p string) string {
	if rest, ok := strings.CutPrefix(p, "~/"); ok || p == "~" {
		if home, err := os.UserHomeDir(); err == nil {
			p = filepath.Join(home, rest)
		}
	}
	if abs, err := filepath.Abs(p); err == nil {
		p = abs
	}
	return (&url.URL{Scheme: "file", Path: filepath.ToSlash(p)}).String()
}

// Location names the store rawURL opens, for people: its scheme, bucket
// or folder and path, never its query (which may carry an endpoint with
// credentials in it).
func Location(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "a store whose URL does not parse"
	}
	return location(u)
}

// location names a store in messages: scheme and bucket, never the query
// (which may carry an endpoint with credentials in it).
func location(u *url.URL) string {
	return u.Scheme + "://" + u.Host + strings.TrimSuffix(u.Path, "/")
}

// checked makes sure the bucket can be reached before anything is read or
// written, so a missing bucket or bad credentials fail at once, saying which.
func checked(ctx context.Context, s *Store, where, bucket string) (*Store, error) {
	if s.bucket == nil {
		return s, nil
	}
	// Not bucket.IsAccessible: it trusts the driver's NotFound (see missing).
	_, _, err := s.bucket.ListPage(ctx, blob.FirstPageToken, 1, nil)
	if err == nil {
		return s, nil
	}
	_ = s.bucket.Close()
	if missing(err) {
		return nil, fmt.Errorf("open backend %s: bucket %q does not exist; create it, or fix the bucket name", where, bucket)
	}
	return nil, fmt.Errorf("open backend %s: %w", where, describeAccessError(err, bucket))
}
