// Package yamlenc writes YAML exactly as sigs.k8s.io/yaml.Marshal does,
// byte for byte, in a fraction of its time and memory.
package yamlenc

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"

	"sigs.k8s.io/yaml"
	goyaml "sigs.k8s.io/yaml/goyaml.v2"
)

// Marshal writes v exactly as sigs.k8s.io/yaml.Marshal does, byte for
// byte, without its detour. That encodes to JSON and parses the JSON back
// with the YAML parser, only to learn which numbers are integers, before
// emitting YAML; and the parser, fed one long flow-style line, copies its
// token queue at every key. In the comment of a 10,000-resource preview the
// detour was over half of all the bytes rendering allocated, which pushed
// the process's peak memory past 300 MB; in an apply of 1,000 objects it
// was the most of the time spent writing the final release.
//
// Here the tree the parser would have built is made directly from the
// types attribute trees hold (what YAML, JSON and the API server decode
// into); other values (a struct) go through JSON's own decoder, much
// cheaper than the YAML parser. Any string the detour would change or
// refuse, and any value JSON refuses, takes the detour instead, so the
// output and the errors stay the same.
func Marshal(v any) ([]byte, error) {
	if tree, ok := parsedTree(v); ok {
		return goyaml.Marshal(tree)
	}
	if tree, ok := viaJSON(v); ok {
		return goyaml.Marshal(tree)
	}
	return yaml.Marshal(v)
}

// viaJSON is parsedTree of v as JSON encodes it. ok is false when v does not
// encode, so that the detour reports the error in its own words.
func viaJSON(v any) (any, bool) {
	j, err := json.Marshal(v)
	if err != nil {
		return nil, false
	}
	d := json.NewDecoder(bytes.NewReader(j))
	// Numbers as written, so that large integers keep every digit.
	d.UseNumber()
	var generic any
	if err := d.Decode(&generic); err != nil {
		return nil, false
	}
	return parsedTree(generic)
}

// parsedTree returns what the YAML parser makes of json.Marshal(v):
// map[any]any for objects, []any for arrays, int, int64, uint64 or float64
// for numbers, and nil for null (a nil map or slice included). ok is false
// when v holds something it cannot be sure of.
func parsedTree(v any) (any, bool) {
	switch t := v.(type) {
	case nil:
		return nil, true
	case json.Number:
		return resolveNumber(string(t))
	case bool:
		return t, true
	case string:
		return t, parsesBack(t)
	case int:
		return t, true
	case int64:
		if int64(int(t)) == t {
			return int(t), true
		}
		return t, true
	case float64:
		// JSON writes a whole float as an integer ("3"), which the parser
		// then reads as one: format it as JSON does, then resolve it as
		// the parser does. NaN and infinities, which JSON refuses, take
		// the detour to fail there.
		b, err := json.Marshal(t)
		if err != nil {
			return nil, false
		}
		return resolveNumber(string(b))
	case map[string]any:
		if t == nil {
			return nil, true
		}
		out := make(map[any]any, len(t))
		for k, x := range t {
			if !parsesBack(k) {
				return nil, false
			}
			y, ok := parsedTree(x)
			if !ok {
				return nil, false
			}
			out[k] = y
		}
		return out, true
	case []any:
		if t == nil {
			return nil, true
		}
		out := make([]any, len(t))
		for i, x := range t {
			y, ok := parsedTree(x)
			if !ok {
				return nil, false
			}
			out[i] = y
		}
		return out, true
	}
	return nil, false
}

// resolveNumber is the YAML parser's reading of a JSON number: an int when
// it fits one, else int64, else uint64, else float64 (goyaml.v2's resolve;
// no JSON number is a timestamp, a special value or a binary literal).
func resolveNumber(s string) (any, bool) {
	if i, err := strconv.ParseInt(s, 0, 64); err == nil {
		if int64(int(i)) == i {
			return int(i), true
		}
		return i, true
	}
	if u, err := strconv.ParseUint(s, 0, 64); err == nil {
		return u, true
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		return f, true
	}
	return nil, false
}

// parsesBack reports whether s comes back from the detour as it went in.
// JSON escapes the control characters below U+0020 and the line and
// paragraph separators, which the YAML parser unescapes. It does not
// escape DEL, the C1 controls and U+FFFE and U+FFFF, which the YAML
// reader refuses, nor U+0085 and the byte-order mark, which a YAML
// scalar treats as a line break and a stream marker; and it replaces
// invalid UTF-8.
func parsesBack(s string) bool {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c == 0x7f {
				return false
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1,
			r < 0xa0, // U+0080 to U+009F: C1 controls and U+0085
			r == 0xfeff, r == 0xfffe, r == 0xffff:
			return false
		}
		i += size
	}
	return true
}
