package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"

	"github.com/kusionpr/kusionpr/model"
)

// appliedFingerprint identifies a resolved spec resource as it is applied:
// its type, its attributes redacted (a secret's value is already only a
// digest there, so this adds nothing to what a release holds) and its
// extensions but this tool's own bookkeeping (kusionpr.io/...).
func appliedFingerprint(r model.Resource) string {
	red := model.Redact(r)
	ext := map[string]any{}
	for k, v := range red.Extensions {
		if !strings.HasPrefix(k, "kusionpr.io/") {
			ext[k] = v
		}
	}
	// encoding/json sorts map keys: equal resources give equal bytes.
	b, err := json.Marshal([]any{red.Type, red.Attributes, ext})
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:16])
}

// withApplied returns r recording that the spec of fingerprint fp made it.
func withApplied(r model.Resource, fp string) model.Resource {
	if fp == "" {
		return r
	}
	ext := make(map[string]any, len(r.Extensions)+1)
	for k, v := range r.Extensions {
		ext[k] = v
	}
	ext[model.AppliedExtension] = fp
	r.Extensions = ext
	return r
}
