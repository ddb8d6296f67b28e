package cloudtoken

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"sync"
	"time"

	"k8s.io/client-go/rest"
)

// Token is a bearer token and when it stops being accepted.
type Token struct {
	Value  string
	Expiry time.Time
}

// String keeps a token out of logs and errors printed with %v.
func (t Token) String() string {
	return fmt.Sprintf("token(redacted, expires %s)", t.Expiry.Format(time.RFC3339))
}

// GoString does the same for %#v.
func (t Token) GoString() string { return t.String() }

// Source computes a fresh token.
type Source interface {
	Token(ctx context.Context) (Token, error)
}

// Error says which cloud, which identity and what failed. Identity is an
// ARN, a service account, a client id or the name of a credential chain,
// never a secret or a token.
type Error struct {
	Cloud    Cloud
	Identity string
	Doing    string
	Err      error
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s token for %s: %s: %v", e.Cloud, e.Identity, e.Doing, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// DefaultRefreshMargin is how long before expiry a token is replaced, so
// a request signed just before expiry is not refused in flight.
const DefaultRefreshMargin = 2 * time.Minute

// Cache reuses a token until RefreshMargin before its expiry, then asks
// its Source again; it is safe for concurrent requests.
type Cache struct {
	Source        Source
	RefreshMargin time.Duration
	Now           func() time.Time

	mu  sync.Mutex
	tok Token
}

// NewCache returns a Cache over src with the default margin and clock.
func NewCache(src Source) *Cache {
	return &Cache{Source: src, RefreshMargin: DefaultRefreshMargin, Now: time.Now}
}

// Token returns the cached token or a new one.
func (c *Cache) Token(ctx context.Context) (Token, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.Now()
	if c.tok.Value != "" && now.Add(c.RefreshMargin).Before(c.tok.Expiry) {
		return c.tok, nil
	}
	t, err := c.Source.Token(ctx)
	if err != nil {
		return Token{}, err
	}
	c.tok = t
	return t, nil
}

// Describe names the token and the identity it was made from ("eks
// token for cluster prod, role arn:..."), once a token was asked for; ""
// before, or for a source that cannot say.
func (c *Cache) Describe() string {
	src := c.Source
	if l, ok := src.(*lazySource); ok {
		l.mu.Lock()
		src = l.src
		l.mu.Unlock()
	}
	if d, ok := src.(interface{ describe() string }); ok {
		return d.describe()
	}
	return ""
}

// Invalidate drops tok if it is still the cached one, so the next request
// gets a fresh token: the server refused it (401) before its expiry, as
// after a role's permissions or a federated credential changed.
func (c *Cache) Invalidate(tok Token) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.tok.Value == tok.Value {
		c.tok = Token{}
	}
}

// Transport sets Authorization: Bearer on every request from Source.
type Transport struct {
	Base   http.RoundTripper
	Source Source
}

// RoundTrip implements http.RoundTripper.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	tok, err := t.Source.Token(req.Context())
	if err != nil {
		return nil, err
	}
	// A RoundTripper must not modify the caller's request.
	r := req.Clone(req.Context())
	r.Header.Set("Authorization", "Bearer "+tok.Value)
	base := t.Base
	if base == nil {
		base = http.DefaultTransport
	}
	resp, err := base.RoundTrip(r)
	if err == nil && resp.StatusCode == http.StatusUnauthorized {
		// The request is not retried (its body may be spent); client-go
		// retries or reports it, and the next one carries a new token, as
		// client-go's exec authenticator does on a 401.
		if inv, ok := t.Source.(interface{ Invalidate(Token) }); ok {
			inv.Invalidate(tok)
		}
	}
	return resp, err
}

// WrappedRoundTripper lets client-go reach the transport underneath (to
// cancel requests, close idle connections).
func (t *Transport) WrappedRoundTripper() http.RoundTripper { return t.Base }

// Configure makes cfg authenticate with src instead of its exec plugin:
// the exec entry and any other credential are removed, so client-go
// starts no process, and the transport sets the bearer token.
func Configure(cfg *rest.Config, src Source) {
	cfg.ExecProvider = nil
	cfg.AuthProvider = nil
	cfg.BearerToken = ""
	cfg.BearerTokenFile = ""
	cfg.Username = ""
	cfg.Password = ""
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return &Transport{Base: rt, Source: src}
	})
}

// Options carries what the SDKs are built with; the zero value means the
// clouds' defaults. Tests point the endpoints at local servers.
type Options struct {
	// Now is the clock used for expiries; nil means time.Now.
	Now func() time.Time
	// Getenv reads the process environment; nil means os.Getenv. The
	// exec entry's own env is consulted first.
	Getenv func(string) string
	// AWS adjusts the loaded AWS configuration (tests use static
	// credentials).
	AWS AWSOptions
	// Azure adjusts the azidentity credentials.
	Azure AzureOptions
	// HTTPClient is used for Google's token endpoints and GitHub's OIDC
	// token endpoint; nil means the default client.
	HTTPClient *http.Client
}

func (o Options) now() time.Time {
	if o.Now != nil {
		return o.Now()
	}
	return time.Now()
}

// NewSource builds the in-process token source for a recognised plugin,
// wrapped in a Cache so tokens are reused until shortly before expiry.
func NewSource(ctx context.Context, p Plugin, opts Options) (*Cache, error) {
	var (
		src Source
		err error
	)
	switch p.Cloud {
	case EKS:
		src, err = newEKSSource(ctx, p, opts)
	case GKE:
		src, err = newGKESource(ctx, p, opts)
	case AKS:
		src, err = newAKSSource(ctx, p, opts)
	default:
		return nil, fmt.Errorf("building token source: unknown cloud %q", p.Cloud)
	}
	if err != nil {
		return nil, err
	}
	c := NewCache(src)
	if opts.Now != nil {
		c.Now = opts.Now
	}
	return c, nil
}

// NewLazySource is NewSource deferred to the first token asked for, so a
// client config can be resolved without a context or any I/O (the
// runtime connects lazily); a failure to build is returned by every
// Token call until one succeeds.
func NewLazySource(p Plugin, opts Options) *Cache {
	c := NewCache(&lazySource{plugin: p, opts: opts})
	if opts.Now != nil {
		c.Now = opts.Now
	}
	return c
}

type lazySource struct {
	plugin Plugin
	opts   Options

	mu  sync.Mutex
	src Source
}

func (l *lazySource) Token(ctx context.Context) (Token, error) {
	l.mu.Lock()
	if l.src == nil {
		src, err := NewSource(ctx, l.plugin, l.opts)
		if err != nil {
			l.mu.Unlock()
			return Token{}, err
		}
		// NewSource's Cache is dropped: the outer one caches already.
		l.src = src.Source
	}
	src := l.src
	l.mu.Unlock()
	return src.Token(ctx)
}

// getenv looks in the exec entry's env, then the process environment.
func (p Plugin) getenv(opts Options, name string) string {
	if v, ok := p.Env[name]; ok {
		return v
	}
	if opts.Getenv != nil {
		return opts.Getenv(name)
	}
	return os.Getenv(name)
}
