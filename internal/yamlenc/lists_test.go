package yamlenc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// TestMarshalListsAsMarshal: MarshalLists writes what Marshal writes, byte
// for byte, on releases whose resources hold what could make a part land
// differently: long strings that fold at column 80 at every depth,
// multi-line and quoted strings, keys needing quotes, numbers, empty and
// nil collections; and on values it must leave to Marshal.
func TestMarshalListsAsMarshal(t *testing.T) {
	type spec struct {
		Resources   []map[string]any `json:"resources"`
		SecretStore map[string]any   `json:"secretStore,omitempty"`
		Context     map[string]any   `json:"context,omitempty"`
	}
	type release struct {
		Project    string    `json:"project"`
		Revision   uint64    `json:"revision"`
		Spec       *spec     `json:"spec"`
		State      *spec     `json:"state"`
		Phase      string    `json:"phase"`
		CreateTime time.Time `json:"createTime"`
		Message    string    `json:"message,omitempty"`
	}
	long := func(n int) string { return strings.TrimSpace(strings.Repeat("word ", n)) }
	resource := func(i int) map[string]any {
		return map[string]any{
			"id": fmt.Sprintf("v1:ConfigMap:ns:cfg-%d", i), "type": "Kubernetes",
			"attributes": map[string]any{
				"data": map[string]any{
					"short": "value", "long": long(10 + i%20), "multiline": "line one\n  line two\n",
					"quoted": "key: value", "number-like": "0x1F", "empty": "", "a10": 1, "a9": 2.5,
					"deep": map[string]any{"deeper": map[string]any{"deepest": long(14 + i%5), "list": []any{long(15), 3, nil}}},
				},
				"weird key: yes": "x", "": "empty key", "unicode": "grüße 日本",
				"emptyList": []any{}, "emptyMap": map[string]any{}, "nil": nil,
			},
		}
	}
	when := time.Date(2026, 11, 25, 10, 0, 0, 123, time.UTC)
	var many []map[string]any
	for i := range 60 {
		many = append(many, resource(i))
	}
	tests := []struct {
		name string
		v    any
	}{
		{"release", release{Project: "shop", Revision: 3, Phase: "succeeded", CreateTime: when, Message: long(30),
			Spec:  &spec{Resources: many, SecretStore: map[string]any{"provider": map[string]any{"name": "x"}}, Context: map[string]any{"k": long(20)}},
			State: &spec{Resources: many[:10]}}},
		{"empty lists", release{Project: "shop", Spec: &spec{Resources: []map[string]any{}}, State: &spec{}}},
		{"nil parts", release{Project: "shop"}},
		{"one resource", release{Project: "p", Spec: &spec{Resources: many[:1]}, State: &spec{Resources: many[1:2]}}},
		{"not an object", []any{1, "two"}},
		{"a key that is not plain", map[string]any{"spec": map[string]any{"resources": []any{1}}, "odd key": 1}},
		{"nil", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want, err := Marshal(tt.v)
			if err != nil {
				t.Fatal(err)
			}
			got, err := MarshalLists(tt.v, "spec.resources", "state.resources")
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("MarshalLists differs from Marshal:\n%s", firstDifference(got, want))
			}
			if r, isRelease := tt.v.(release); isRelease && r.Spec != nil && len(r.Spec.Resources) > 0 && !splitWhole(t, tt.v) {
				t.Error("a release was not encoded part by part")
			}
		})
	}
}

// TestMarshalListsRandom compares the two on random resources: strings of
// words of random length at random depths, so that some fold and some do
// not at every column.
func TestMarshalListsRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	words := []string{"a", "word", "x:", "#", "-", "longerword", "'q'", "\"d\"", "1", "true", "\n", "ü"}
	var value func(depth int) any
	value = func(depth int) any {
		switch k := rng.IntN(6); {
		case k == 0 && depth < 5:
			m := map[string]any{}
			for i := range rng.IntN(4) {
				m[fmt.Sprintf("k%d%s", i, strings.Repeat("y", rng.IntN(12)))] = value(depth + 1)
			}
			return m
		case k == 1 && depth < 5:
			var l []any
			for range rng.IntN(3) {
				l = append(l, value(depth+1))
			}
			return l
		case k == 2:
			return rng.IntN(1000)
		default:
			var b strings.Builder
			for range rng.IntN(30) {
				b.WriteString(words[rng.IntN(len(words))])
				b.WriteByte(' ')
			}
			return b.String()
		}
	}
	for n := range 200 {
		var rs []any
		for range 1 + rng.IntN(5) {
			rs = append(rs, map[string]any{"id": fmt.Sprint(n), "attributes": value(0)})
		}
		v := map[string]any{"project": "p", "spec": map[string]any{"resources": rs}, "state": map[string]any{"resources": rs, "other": value(1)}}
		want, err := Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		got, err := MarshalLists(v, "spec.resources", "state.resources")
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("case %d: MarshalLists differs from Marshal:\n%s", n, firstDifference(got, want))
		}
		if !splitWhole(t, v) {
			t.Fatalf("case %d was not encoded part by part", n)
		}
	}
}

func firstDifference(got, want []byte) string {
	g, w := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
	for i := range min(len(g), len(w)) {
		if g[i] != w[i] {
			return fmt.Sprintf("line %d:\n got  %q\n want %q", i+1, g[i], w[i])
		}
	}
	return fmt.Sprintf("lengths: got %d lines, want %d", len(g), len(w))
}

// splitWhole says whether MarshalLists encodes v part by part, list items
// one by one, without leaving any of it to Marshal.
func splitWhole(t *testing.T, v any) bool {
	t.Helper()
	j, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var parts []part
	if !split(j, nil, map[string]map[string]bool{"spec": {"resources": true}, "state": {"resources": true}}, &parts) {
		return false
	}
	encodeParts(parts)
	items := 0
	for _, p := range parts {
		if !p.ok {
			return false
		}
		if p.item {
			items++
		}
	}
	return items > 0
}
