package model

import "testing"

func TestReferenceIndexParse(t *testing.T) {
	x := NewReferenceIndex([]string{"a.b", "a.b.c", "networking.k8s.io/v1:Ingress:ns:web", "hashicorp:aws:aws_db_instance:db"})
	tests := []struct {
		s        string
		ok       bool
		id, path string
	}{
		{s: "$kusion_path.a.b.c.d", ok: true, id: "a.b.c", path: "d"}, // the longest id wins
		{s: "$kusion_path.a.b.c", ok: true, id: "a.b", path: "c"},     // an id needs a path after it
		{s: "$kusion_path.networking.k8s.io/v1:Ingress:ns:web.status.loadBalancer", ok: true, id: "networking.k8s.io/v1:Ingress:ns:web", path: "status.loadBalancer"},
		{s: "$kusion_path.hashicorp:aws:aws_db_instance:db.address", ok: true, id: "hashicorp:aws:aws_db_instance:db", path: "address"},
		{s: "$kusion_path.nothing.here", ok: true},
		{s: "$kusion_path.a.b.", ok: true},
		{s: "plain string", ok: false},
	}
	for _, tt := range tests {
		ref, ok := x.Parse(tt.s)
		if ok != tt.ok || ref.ResourceID != tt.id || ref.Path != tt.path {
			t.Errorf("Parse(%q) = %+v, %v; want id %q path %q, %v", tt.s, ref, ok, tt.id, tt.path, tt.ok)
		}
	}
	refs := x.References(map[string]any{"a": []any{"$kusion_path.a.b.x", map[string]any{"b": "text"}}})
	if len(refs) != 1 || refs[0].ResourceID != "a.b" {
		t.Errorf("References = %+v", refs)
	}
}
