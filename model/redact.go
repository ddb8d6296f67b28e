package model

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"regexp"
	"strconv"
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

// StateExtension holds what a runtime needs to continue from a resource's
// recorded state beyond its attributes (a Terraform state). It is kept in
// releases and never rendered: see Public.
const StateExtension = "kusionpr.io/state"

// ReplacePathsExtension, on a planned resource, lists the attribute paths
// that force the object to be destroyed and created again.
const ReplacePathsExtension = "kusionpr.io/replace-paths"

// AppliedExtension, on a resource of a release's state, identifies the
// spec (resolved and redacted) whose apply left the object so: a preview
// that finds the same spec and the object as recorded knows, without asking
// the runtime, that applying again would change nothing.
const AppliedExtension = "kusionpr.io/applied"

// Public returns r as people may see it: sensitive values fingerprinted and
// the runtime's private state left out.
func Public(r Resource) Resource {
	out := Redact(r)
	delete(out.Extensions, StateExtension)
	delete(out.Extensions, ReplacePathsExtension)
	delete(out.Extensions, AppliedExtension)
	if len(out.Extensions) == 0 {
		out.Extensions = nil
	}
	return out
}

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

// redactPath fingerprints what path names; a list index is a number segment
// (Terraform's sensitivity data marks list items too) and "*" stands for
// every item.
func redactPath(v any, path []string) {
	if len(path) == 0 {
		return
	}
	if path[0] == "*" {
		// Every item of a list or every value of a map: a nested block's
		// sensitive attribute, whatever the block's position.
		switch t := v.(type) {
		case map[string]any:
			for k := range t {
				redactPath(t, append([]string{k}, path[1:]...))
			}
		case []any:
			for i := range t {
				redactPath(t, append([]string{strconv.Itoa(i)}, path[1:]...))
			}
		}
		return
	}
	switch t := v.(type) {
	case map[string]any:
		x, ok := t[path[0]]
		if !ok {
			return
		}
		if len(path) > 1 {
			redactPath(x, path[1:])
			return
		}
		t[path[0]] = redactValue(x)
	case []any:
		i, err := strconv.Atoi(path[0])
		if err != nil || i < 0 || i >= len(t) {
			return
		}
		if len(path) > 1 {
			redactPath(t[i], path[1:])
			return
		}
		t[i] = redactValue(t[i])
	}
}

// WithSensitivePaths returns a copy of r whose SensitivePathsExtension also
// lists paths, so that Redact masks them.
func WithSensitivePaths(r Resource, paths []string) Resource {
	if len(paths) == 0 {
		return r
	}
	out := r.DeepCopy()
	seen := map[string]bool{}
	var all []any
	for _, p := range append(SensitivePaths(r), paths...) {
		if !seen[p] {
			seen[p] = true
			all = append(all, p)
		}
	}
	if out.Extensions == nil {
		out.Extensions = map[string]any{}
	}
	out.Extensions[SensitivePathsExtension] = all
	return out
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
