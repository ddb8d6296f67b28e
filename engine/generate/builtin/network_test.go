package builtin

import (
	"strings"
	"testing"

	"github.com/kusionpr/kusionpr/engine/generate/module"
)

const networkWorkload = `
_type: service.Service
labels: {team: a, version: 1.10}
annotations: {note: dev}
containers: {main: {image: nginx}}
`

func TestNetwork(t *testing.T) {
	unique := map[string]any{"app.kubernetes.io/part-of": "proj", "app.kubernetes.io/name": "web"}
	cases := []struct {
		name     string
		workload string
		dev      string
		platform string
		wantIDs  []string
		check    func(t *testing.T, r []map[string]any)
	}{
		{
			name:     "private and public, catalog platform shape",
			workload: networkWorkload,
			dev: `_type: network.Network
ports:
  - {port: 8080, targetPort: 80}
  - {port: 53, protocol: UDP}
  - {public: true}
  - {port: 443, targetPort: 8443, public: true}`,
			platform: `port:
  type: alicloud
  labels: {kusionstack.io/control: "true", team: platform}
  annotations: {service.beta.kubernetes.io/alibaba-cloud-loadbalancer-spec: slb.s1.small}
importedResources: {"v1:Service:proj:x": "y"}`,
			wantIDs: []string{"v1:Service:proj:proj-dev-web-private", "v1:Service:proj:proj-dev-web-public"},
			check: func(t *testing.T, r []map[string]any) {
				equal(t, "private labels", get(t, r[0], "metadata", "labels"), map[string]any{
					"app.kubernetes.io/part-of": "proj", "app.kubernetes.io/name": "web", "team": "a", "version": "1.10",
				})
				equal(t, "private annotations", get(t, r[0], "metadata", "annotations"), map[string]any{"note": "dev"})
				equal(t, "private spec", get(t, r[0], "spec"), map[string]any{
					"type":     "ClusterIP",
					"selector": unique,
					"ports": []any{
						map[string]any{"name": "proj-dev-web-private-8080-tcp", "port": 8080, "targetPort": 80, "protocol": "TCP"},
						map[string]any{"name": "proj-dev-web-private-53-udp", "port": 53, "targetPort": 53, "protocol": "UDP"},
					},
				})
				// The platform's labels go on top of the workload's.
				equal(t, "public labels", get(t, r[1], "metadata", "labels"), map[string]any{
					"app.kubernetes.io/part-of": "proj", "app.kubernetes.io/name": "web",
					"team": "platform", "version": "1.10", "kusionstack.io/control": "true",
				})
				equal(t, "public annotations", get(t, r[1], "metadata", "annotations"), map[string]any{
					"note": "dev", "service.beta.kubernetes.io/alibaba-cloud-loadbalancer-spec": "slb.s1.small",
				})
				equal(t, "public spec", get(t, r[1], "spec"), map[string]any{
					"type":     "LoadBalancer",
					"selector": unique,
					"ports": []any{
						map[string]any{"name": "proj-dev-web-public-80-tcp", "port": 80, "targetPort": 80, "protocol": "TCP"},
						map[string]any{"name": "proj-dev-web-public-443-tcp", "port": 443, "targetPort": 8443, "protocol": "TCP"},
					},
				})
			},
		},
		{
			name:     "flat platform shape from the docs",
			workload: networkWorkload,
			dev:      "ports: [{port: 80, public: true}]",
			platform: "type: aws\nannotations: {service.beta.kubernetes.io/aws-load-balancer-type: nlb}",
			wantIDs:  []string{"v1:Service:proj:proj-dev-web-public"},
			check: func(t *testing.T, r []map[string]any) {
				equal(t, "annotations", get(t, r[0], "metadata", "annotations"), map[string]any{
					"note": "dev", "service.beta.kubernetes.io/aws-load-balancer-type": "nlb",
				})
			},
		},
		{
			name:     "private only needs no platform config; no workload labels",
			workload: "_type: service.Service\ncontainers: {main: {image: nginx}}",
			dev:      "ports: [{port: 80}]",
			wantIDs:  []string{"v1:Service:proj:proj-dev-web-private"},
			check: func(t *testing.T, r []map[string]any) {
				equal(t, "labels", get(t, r[0], "metadata", "labels"), unique)
				if has(t, r[0], "metadata", "annotations") {
					t.Error("empty annotations written")
				}
			},
		},
		{
			name:    "no ports, no Services",
			dev:     "_type: network.Network",
			wantIDs: []string{},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp := generate(t, "network", request(c.workload, c.dev, c.platform, ""))
			equal(t, "ids", ids(resp.Resources), c.wantIDs)
			if resp.Patcher != nil {
				t.Errorf("patcher %#v", resp.Patcher)
			}
			var attrs []map[string]any
			for _, r := range resp.Resources {
				attrs = append(attrs, r.Attributes)
			}
			if c.check != nil {
				c.check(t, attrs)
			}
		})
	}
}

// A port name is a DNS label: past 63 characters it falls back to the port
// and protocol alone.
func TestNetworkLongPortName(t *testing.T) {
	req := request("", "ports: [{port: 8080}]", "", "")
	req.App = strings.Repeat("a", 40)
	resp := generate(t, "network", req)
	svc := resp.Resources[0].Attributes
	equal(t, "name", get(t, svc, "metadata", "name"), "proj-dev-"+req.App+"-private")
	equal(t, "port name", get(t, svc, "spec", "ports", 0, "name"), "8080-tcp")
}

func TestNetworkErrors(t *testing.T) {
	dc, pc := module.DevConfig, module.PlatformConfig
	cases := []struct {
		name, workload, dev, platform string
		want                          []wantErr
	}{
		{"bad ports", "", "ports: [{port: 0}, {port: 80, targetPort: 0}, {protocol: tcp}, {port: 80}, {port: 80, protocol: UDP}]", "",
			[]wantErr{
				{dc, "ports[0].port", "must be between 1 and 65535"},
				{dc, "ports[1].targetPort", "must be between 1 and 65535"},
				{dc, "ports[2].protocol", "want TCP or UDP"},
				{dc, "ports[3]", "port-protocol pair must not be duplicate"},
			}},
		{"public without a type", "", "ports: [{public: true}]", "labels: {a: b}",
			[]wantErr{{pc, "type", "required when a port is public"}}},
		{"public with an unknown cloud", "", "ports: [{public: true}]", "port: {type: gcp}",
			[]wantErr{{pc, "port.type", "want aws or alicloud"}}},
		{"both platform shapes", "", "ports: [{public: true}]", "type: aws\nport: {type: aws}",
			[]wantErr{{pc, "port", "give type, labels and annotations either under port or at the top level, not both"}}},
		{"unknown fields", "", "ports: [{port: 80, nodePort: 30080}]", "port: {typ: aws}",
			[]wantErr{
				{dc, "ports[0].nodePort", "unknown field (want one of port, protocol, public, targetPort)"},
				{pc, "port.typ", "unknown field (want one of annotations, labels, type)"},
			}},
		{"wrong kinds", "", "ports: {port: 80}", "",
			[]wantErr{{dc, "ports", "want a list, got a mapping"}}},
		{"workload labels not a mapping", "labels: [a]", "ports: [{port: 80}]", "",
			[]wantErr{{module.Workload, "labels", "want a mapping, got a list"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			checkErrors(t, "network", request(c.workload, "_type: network.Network\n"+c.dev, c.platform, ""), c.want)
		})
	}
}
