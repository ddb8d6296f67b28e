package spec

import (
	"bytes"
	"os"
	"testing"
)

// FuzzParse feeds Parse arbitrary bytes: pull requests carry untrusted specs,
// and nothing may panic on them. Whatever parses must validate without
// panicking and survive Write and Parse again.
func FuzzParse(f *testing.F) {
	for _, path := range []string{"testdata/kusion-generate.yaml", "testdata/kusion-generate.json"} {
		data, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, seed := range []string{
		"",
		"[]",
		"resources: {}",
		"resources:\n- id: v1:Namespace:a\n  type: Kubernetes\n  attributes: {apiVersion: v1, kind: Namespace, metadata: {name: a}}\n  dependsOn: [v1:Namespace:a]\n",
		"resources:\n- {id: a, type: Terraform, attributes: {x: $kusion_path.a.b, y: [$kusion_path.]}}\n- {id: a}\n",
		"a: &a [*a]",
		`{"resources": [{"id": "x:y:z:w", "type": "Terraform", "dependsOn": [1]}], "context": null}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse("fuzz.yaml", data)
		if err != nil {
			return
		}
		_ = Validate("fuzz.yaml", s)
		for _, format := range []string{"yaml", "json"} {
			var buf bytes.Buffer
			if err := Write(&buf, s, format); err != nil {
				t.Fatalf("Write %s of a parsed spec: %v", format, err)
			}
			if _, err := Parse("again."+format, buf.Bytes()); err != nil {
				t.Fatalf("Parse of written %s:\n%s\n%v", format, buf.String(), err)
			}
		}
	})
}
