package cloudfake

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/xml"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// awsCredential is a key pair STS knows and the identity it stands for.
type awsCredential struct {
	secret, session, arn string
	expires              time.Time // zero for the IAM user's keys
}

// presignWindow is how long STS takes a presigned GetCallerIdentity from
// its X-Amz-Date, whatever X-Amz-Expires says: EKS tokens live on that.
const presignWindow = 15 * time.Minute

// sts serves STS's query API: a presigned GetCallerIdentity (GET) and
// AssumeRoleWithWebIdentity (POST form, unsigned, as in AWS).
func (s *Server) sts(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		stsError(w, http.StatusBadRequest, "InvalidQueryParameter", err.Error())
		return
	}
	switch r.Form.Get("Action") {
	case "GetCallerIdentity":
		arn, err := s.callerIdentity(r.URL, r.Host, r.Header)
		if err != nil {
			stsError(w, http.StatusForbidden, "SignatureDoesNotMatch", err.Error())
			return
		}
		writeXML(w, getCallerIdentityResponse{Result: callerIdentity{Arn: arn, Account: AWSAccount, UserID: "AIDAKUSIONPRTEST"}})
	case "AssumeRoleWithWebIdentity":
		s.assumeRoleWithWebIdentity(w, r)
	default:
		stsError(w, http.StatusBadRequest, "InvalidAction", "unsupported action "+r.Form.Get("Action"))
	}
}

// callerIdentity checks a presigned GetCallerIdentity URL, as sent to
// host with header, by SigV4 (written here from AWS's description rather
// than with the SDK's signer, so a token the SDK signs wrongly is caught)
// and returns the identity of its key.
func (s *Server) callerIdentity(u *url.URL, host string, header http.Header) (string, error) {
	q := u.Query()
	if q.Get("X-Amz-Algorithm") != "AWS4-HMAC-SHA256" {
		return "", errors.New("not a SigV4 presigned request")
	}
	key, scope, ok := strings.Cut(q.Get("X-Amz-Credential"), "/")
	if !ok {
		return "", errors.New("malformed X-Amz-Credential")
	}
	cred, err := s.awsKey(key)
	if err != nil {
		return "", err
	}
	if cred.session != q.Get("X-Amz-Security-Token") {
		return "", errors.New("the security token does not match the access key")
	}
	when, err := time.Parse("20060102T150405Z", q.Get("X-Amz-Date"))
	if err != nil {
		return "", errors.New("malformed X-Amz-Date")
	}
	now := s.now()
	if now.Sub(when) > presignWindow || when.Sub(now) > 5*time.Minute {
		return "", fmt.Errorf("request has expired (signed at %s)", when.Format(time.RFC3339))
	}
	parts := strings.Split(scope, "/") // date/region/service/aws4_request
	if len(parts) != 4 || parts[0] != when.Format("20060102") || parts[2] != "sts" || parts[3] != "aws4_request" {
		return "", fmt.Errorf("credential scope %q is not STS's for %s", scope, when.Format("20060102"))
	}
	signed := strings.Split(q.Get("X-Amz-SignedHeaders"), ";")
	if !slices.Contains(signed, "host") {
		return "", errors.New("host is not signed")
	}
	var canonHeaders strings.Builder
	for _, h := range signed {
		v := header.Get(h)
		if h == "host" {
			v = host
		}
		canonHeaders.WriteString(h + ":" + strings.TrimSpace(v) + "\n")
	}
	q.Del("X-Amz-Signature")
	emptyHash := sha256.Sum256(nil)
	canonical := strings.Join([]string{http.MethodGet, awsPath(u.EscapedPath()), awsQuery(q), canonHeaders.String(),
		q.Get("X-Amz-SignedHeaders"), hex.EncodeToString(emptyHash[:])}, "\n")
	ch := sha256.Sum256([]byte(canonical))
	toSign := "AWS4-HMAC-SHA256\n" + q.Get("X-Amz-Date") + "\n" + scope + "\n" + hex.EncodeToString(ch[:])
	k := []byte("AWS4" + cred.secret)
	for _, p := range parts {
		k = hmacSHA256(k, p)
	}
	want := hex.EncodeToString(hmacSHA256(k, toSign))
	if !hmac.Equal([]byte(want), []byte(u.Query().Get("X-Amz-Signature"))) {
		return "", errors.New("the request signature we calculated does not match the signature you provided")
	}
	return cred.arn, nil
}

func (s *Server) awsKey(id string) (awsCredential, error) {
	if id == AWSAccessKey {
		return awsCredential{secret: AWSSecretKey, arn: AWSUserARN}, nil
	}
	s.mu.Lock()
	c, ok := s.awsTemp[id]
	s.mu.Unlock()
	if !ok {
		return c, errors.New("the security token included in the request is invalid")
	}
	if !s.now().Before(c.expires) {
		return c, errors.New("the security token included in the request is expired")
	}
	return c, nil
}

// assumeRoleWithWebIdentity trades a GitHub OIDC token (audience
// sts.amazonaws.com, as configure-aws-credentials asks) for a role's
// temporary credentials.
func (s *Server) assumeRoleWithWebIdentity(w http.ResponseWriter, r *http.Request) {
	role, session := r.Form.Get("RoleArn"), r.Form.Get("RoleSessionName")
	name, ok := strings.CutPrefix(role, "arn:aws:iam::"+AWSAccount+":role/")
	if !ok || name == "" || session == "" {
		stsError(w, http.StatusBadRequest, "ValidationError", "RoleArn must be a role of account "+AWSAccount+" and RoleSessionName set")
		return
	}
	sub, err := s.verifyGitHub(r.Form.Get("WebIdentityToken"), "sts.amazonaws.com")
	if err != nil {
		stsError(w, http.StatusBadRequest, "InvalidIdentityToken", err.Error())
		return
	}
	id, secret, session2 := "ASIA"+randomHex(8), randomHex(20), randomHex(32)
	arn := fmt.Sprintf("arn:aws:sts::%s:assumed-role/%s/%s", AWSAccount, name, session)
	exp := s.now().Add(time.Hour)
	s.mu.Lock()
	s.awsTemp[strings.ToUpper(id)] = awsCredential{secret: secret, session: session2, arn: arn, expires: exp}
	s.mu.Unlock()
	writeXML(w, assumeRoleResponse{Result: assumeRoleResult{
		Subject: sub, Audience: "sts.amazonaws.com",
		User:  assumedRoleUser{Arn: arn, ID: "AROAKUSIONPRTEST:" + session},
		Creds: stsCredentials{AccessKeyID: strings.ToUpper(id), SecretAccessKey: secret, SessionToken: session2, Expiration: exp.UTC().Format(time.RFC3339)},
	}})
}

// awsPath is the canonical URI: each segment URI-encoded once.
func awsPath(escaped string) string {
	if escaped == "" {
		return "/"
	}
	p, err := url.PathUnescape(escaped)
	if err != nil {
		return escaped
	}
	segs := strings.Split(p, "/")
	for i, s := range segs {
		segs[i] = awsEscape(s)
	}
	return strings.Join(segs, "/")
}

// awsQuery is the canonical query string: keys sorted, each key and value
// URI-encoded by AWS's rules.
func awsQuery(q url.Values) string {
	var pairs []string
	for k, vs := range q {
		for _, v := range vs {
			pairs = append(pairs, awsEscape(k)+"="+awsEscape(v))
		}
	}
	slices.Sort(pairs)
	return strings.Join(pairs, "&")
}

// awsEscape encodes every byte but A-Z, a-z, 0-9, '-', '_', '.', '~'.
func awsEscape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || strings.IndexByte("-_.~", c) >= 0 {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "%%%02X", c)
	}
	return b.String()
}

func hmacSHA256(key []byte, data string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(data))
	return m.Sum(nil)
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)[:n]
}

const stsNamespace = "https://sts.amazonaws.com/doc/2011-06-15/"

type getCallerIdentityResponse struct {
	XMLName xml.Name       `xml:"GetCallerIdentityResponse"`
	NS      string         `xml:"xmlns,attr"`
	Result  callerIdentity `xml:"GetCallerIdentityResult"`
}

type callerIdentity struct {
	Arn     string `xml:"Arn"`
	UserID  string `xml:"UserId"`
	Account string `xml:"Account"`
}

type assumeRoleResponse struct {
	XMLName xml.Name         `xml:"AssumeRoleWithWebIdentityResponse"`
	NS      string           `xml:"xmlns,attr"`
	Result  assumeRoleResult `xml:"AssumeRoleWithWebIdentityResult"`
}

type assumeRoleResult struct {
	Subject  string          `xml:"SubjectFromWebIdentityToken"`
	Audience string          `xml:"Audience"`
	User     assumedRoleUser `xml:"AssumedRoleUser"`
	Creds    stsCredentials  `xml:"Credentials"`
}

type assumedRoleUser struct {
	Arn string `xml:"Arn"`
	ID  string `xml:"AssumedRoleId"`
}

type stsCredentials struct {
	AccessKeyID     string `xml:"AccessKeyId"`
	SecretAccessKey string `xml:"SecretAccessKey"`
	SessionToken    string `xml:"SessionToken"`
	Expiration      string `xml:"Expiration"`
}

type stsErrorResponse struct {
	XMLName xml.Name `xml:"ErrorResponse"`
	NS      string   `xml:"xmlns,attr"`
	Error   struct {
		Type    string `xml:"Type"`
		Code    string `xml:"Code"`
		Message string `xml:"Message"`
	} `xml:"Error"`
}

func writeXML(w http.ResponseWriter, v any) {
	switch r := v.(type) {
	case getCallerIdentityResponse:
		r.NS = stsNamespace
		v = r
	case assumeRoleResponse:
		r.NS = stsNamespace
		v = r
	}
	w.Header().Set("Content-Type", "text/xml")
	_ = xml.NewEncoder(w).Encode(v)
}

func stsError(w http.ResponseWriter, status int, code, msg string) {
	var e stsErrorResponse
	e.NS = stsNamespace
	e.Error.Type, e.Error.Code, e.Error.Message = "Sender", code, msg
	w.Header().Set("Content-Type", "text/xml")
	w.WriteHeader(status)
	_ = xml.NewEncoder(w).Encode(e)
}
