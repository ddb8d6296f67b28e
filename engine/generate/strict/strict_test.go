package strict

import (
	"reflect"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
)

type port struct {
	Port     int    `json:"port"`
	Protocol string `json:"protocol,omitempty"`
	Public   bool   `json:"public,omitempty"`
}

type base struct {
	Type string `json:"_type"`
}

type config struct {
	base
	Version  string            `json:"version"`
	Replicas *int32            `json:"replicas,omitempty"`
	Ports    []port            `json:"ports"`
	Labels   map[string]string `json:"labels"`
	Extra    any               `json:"extra"`
	Raw      *yaml.Node        `json:"raw"`
	CPU      resource.Quantity `json:"cpu"`
	Target   intstr.IntOrString
	Ratio    float64 `json:"ratio"`
	Ignored  string  `json:"-"`
}

func TestUnmarshal(t *testing.T) {
	three := int32(3)
	tests := []struct {
		name string
		doc  string
		want config
		errs []string // "path: message" of each error, in order
	}{
		{
			name: "every kind",
			doc: `_type: mysql.MySQL
version: 8.0
replicas: 3
ports: [{port: 80, protocol: TCP, public: true}, {port: 443.0}]
labels: {a: b, n: 1}
extra: {x: [1, 2.5, true, null, s]}
raw: {keep: me}
cpu: 0.5
Target: 8080
ratio: 2
`,
			want: config{
				base: base{Type: "mysql.MySQL"}, Version: "8.0", Replicas: &three,
				Ports:  []port{{Port: 80, Protocol: "TCP", Public: true}, {Port: 443}},
				Labels: map[string]string{"a": "b", "n": "1"},
				Extra:  map[string]any{"x": []any{1, 2.5, true, nil, "s"}},
				CPU:    resource.MustParse("500m"), Target: intstr.FromInt32(8080), Ratio: 2,
			},
		},
		{
			name: "anchors and merge keys",
			doc:  "defaults: &d {port: 80}\nports: [{<<: *d, protocol: UDP}]\n",
			errs: []string{"defaults: unknown field (want one of Target, _type, cpu, extra, labels, ports, ratio, raw, replicas, version)"},
		},
		{
			name: "wrong kinds name the path and never repeat a string",
			doc:  "replicas: two\nports: [{port: 80}, {port: 8.5}, {port: x, public: yes-please}]\nlabels: [a]\nversion: {a: 1}\n",
			errs: []string{
				"replicas: want an integer, got a string",
				"ports[1].port: want an integer, got the number 8.5",
				"ports[2].port: want an integer, got a string",
				"ports[2].public: want true or false, got a string",
				"labels: want a mapping, got a list",
				"version: want a string, got a mapping",
			},
		},
		{
			name: "a KCL schema's _type is taken on any mapping, and must name one",
			doc:  "ports: [{_type: network.Port, port: 80}, {_type: [x], port: 81}]\n",
			want: config{Ports: []port{{Port: 80}, {Port: 81}}},
			errs: []string{"ports[1]._type: want the name of a KCL schema, got a list"},
		},
		{
			name: "unknown and repeated fields",
			doc:  "version: '1'\nports: [{port: 1, prot: TCP}]\nversion: '2'\n",
			errs: []string{
				"ports[0].prot: unknown field (want one of port, protocol, public)",
				"version: given twice",
			},
		},
		{
			name: "quantity rejects nonsense with its own words",
			doc:  "cpu: lots\n",
			errs: []string{"cpu: quantities must match the regular expression"},
		},
		{name: "empty document", doc: ""},
		{name: "null fields stay unset", doc: "version: null\nports: ~\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got config
			err := Unmarshal([]byte(tt.doc), &got)
			if len(tt.errs) > 0 {
				list := Errors(err)
				if len(list) != len(tt.errs) {
					t.Fatalf("got %d errors, want %d:\n%v", len(list), len(tt.errs), err)
				}
				for i, e := range list {
					if !strings.HasPrefix(e.Error(), tt.errs[i]) {
						t.Errorf("error %d = %q, want it to start with %q", i, e.Error(), tt.errs[i])
					}
					if e.Line == 0 {
						t.Errorf("error %d (%s) has no line", i, e)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got.Raw = nil // compared apart
			if got.CPU.Cmp(tt.want.CPU) != 0 {
				t.Errorf("cpu = %s, want %s", got.CPU.String(), tt.want.CPU.String())
			}
			got.CPU, tt.want.CPU = resource.Quantity{}, resource.Quantity{}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %#v\nwant %#v", got, tt.want)
			}
		})
	}
}

func TestUnmarshalKeepsRawNodes(t *testing.T) {
	var got config
	if err := Unmarshal([]byte("raw: {keep: me}\n"), &got); err != nil {
		t.Fatal(err)
	}
	if got.Raw == nil || got.Raw.Kind != yaml.MappingNode || got.Raw.Content[1].Value != "me" {
		t.Fatalf("raw node = %#v", got.Raw)
	}
}

func TestErrorLinesAndPrefix(t *testing.T) {
	node, err := Parse([]byte("a: 1\nports:\n  - port: 1\n  - port: nope\n"))
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		A     int    `json:"a"`
		Ports []port `json:"ports"`
	}
	list := Errors(Decode(node, "web.accessories.net", &v))
	if len(list) != 1 || list[0].Path != "web.accessories.net.ports[1].port" || list[0].Line != 4 {
		t.Fatalf("errors = %+v", list)
	}
}

func TestParseRejectsBrokenYAML(t *testing.T) {
	if _, err := Parse([]byte("a: [1, 2\n")); err == nil {
		t.Fatal("broken YAML parsed")
	}
}
