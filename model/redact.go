package model

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"regexp"
	"strings"
)

// Sensitive values (Kubernetes Secret data, Terraform sensitive attributes)
// never leave a runtime in the clear: they are replaced by a fingerprint, so
// that two reads of the same value still compare equal (for drift and change
// detection) while the value itself is in no state, preview or log. Renderers
// print only SensitiveMask.
const (
	sensitivePrefix = "(sensitive sha256:"
	SensitiveMask   = "(sensitive)"
)

// SensitivePathsExtension lists dot-separated attribute paths a runtime found
// sensitive (for example from a Terraform provider schema).
const SensitivePathsExtension = "kusionpr.io/sensitive-paths"

// Fingerprint replaces a sensitive value with a short digest of it.
func Fingerprint(value string) string {
	sum := sha256.Sum256([]byte(value))
	return sensitivePrefix + hex.EncodeToString(sum[:8]) + ")"
}

// IsFingerprint reports whether s is the redacted form of a sensitive value.
func IsFingerprint(s string) bool {
	return strings.HasPrefix(s, sensitivePrefix) && strings.HasSuffix(s, ")")
}

// Redact returns a copy of r with every sensitive value fingerprinted: a
// Kubernetes Secret's data (decoded first, so data and stringData of the same
// value agree) and stringData, and any path listed in SensitivePathsExtension.
func Redact(r Resource) Resource {
	out := r.DeepCopy()
	if out.Type == Kubernetes && out.Attributes != nil && out.Attributes["kind"] == "Secret" {
		if d, ok := out.Attributes["data"].(map[string]any); ok {
			for k, v := range d {
				s, _ := v.(string)
				if IsFingerprint(s) {
					continue
				}
				if raw, err := base64.StdEncoding.DecodeString(s); err == nil {
					s = string(raw)
				}
				d[k] = Fingerprint(s)
			}
		}
		if d, ok := out.Attributes["stringData"].(map[string]any); ok {
			for k, v := range d {
				if s, _ := v.(string); !IsFingerprint(s) {
					d[k] = Fingerprint(s)
				}
			}
		}
	}
	for _, p := range SensitivePaths(out) {
		redactPath(out.Attributes, strings.Split(p, "."))
	}
	return out
}

// SensitivePaths returns the attribute paths listed in SensitivePathsExtension.
func SensitivePaths(r Resource) []string {
	raw, _ := r.Extensions[SensitivePathsExtension].([]any)
	var out []string
	for _, p := range raw {
		if s, ok := p.(string); ok && s != "" {
			out = append(out, s)
		}
	}
	if ss, ok := r.Extensions[SensitivePathsExtension].([]string); ok {
		out = append(out, ss...)
	}
	return out
}

func redactPath(v any, path []string) {
	m, ok := v.(map[string]any)
	if !ok || len(path) == 0 {
		return
	}
	x, ok := m[path[0]]
	if !ok {
		return
	}
	if len(path) > 1 {
		redactPath(x, path[1:])
		return
	}
	m[path[0]] = redactValue(x)
}

// redactValue fingerprints every leaf below v.
func redactValue(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, x := range t {
			t[k] = redactValue(x)
		}
		return t
	case []any:
		for i, x := range t {
			t[i] = redactValue(x)
		}
		return t
	case string:
		if IsFingerprint(t) {
			return t
		}
		return Fingerprint(t)
	case nil:
		return nil
	default:
		b, _ := jsonScalar(t)
		return Fingerprint(b)
	}
}

var fingerprintPattern = regexp.MustCompile(`\(sensitive sha256:[0-9a-f]+\)`)

// MaskFingerprints replaces every fingerprint in rendered text by
// SensitiveMask: outputs people read show that a sensitive value is there,
// never anything derived from it.
func MaskFingerprints(s string) string {
	if !strings.Contains(s, sensitivePrefix) {
		return s
	}
	return fingerprintPattern.ReplaceAllString(s, SensitiveMask)
}
