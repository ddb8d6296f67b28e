package builtin

import (
	"strconv"

	"github.com/kusionpr/kusionpr/engine/generate/module"
)

// portConfig is a port as the developer writes it, in the network accessory
// or (validated only) in a service workload.
type portConfig struct {
	Port       *int   `json:"port"`
	TargetPort *int   `json:"targetPort"`
	Protocol   string `json:"protocol"`
	Public     bool   `json:"public"`
}

// servicePort is a port with its defaults filled in.
type servicePort struct {
	port, targetPort int
	protocol         string
	public           bool
}

const (
	defaultPort     = 80
	defaultProtocol = "TCP"
)

// completePorts fills in the catalog's defaults (port 80, targetPort = port,
// TCP) and checks each port, reporting problems at path[i] of src.
func completePorts(src module.Source, path string, in []portConfig) ([]servicePort, error) {
	var p problems
	out := make([]servicePort, 0, len(in))
	seen := map[string]bool{}
	for i, c := range in {
		at := indexPath(path, i)
		sp := servicePort{port: defaultPort, protocol: defaultProtocol, public: c.Public}
		if c.Port != nil {
			sp.port = *c.Port
		}
		sp.targetPort = sp.port
		if c.TargetPort != nil {
			sp.targetPort = *c.TargetPort
		}
		if c.Protocol != "" {
			sp.protocol = c.Protocol
		}
		pairOK, targetOK := true, true
		if sp.port < 1 || sp.port > 65535 {
			p.add(src, joinPath(at, "port"), "must be between 1 and 65535")
			pairOK = false
		}
		// A defaulted targetPort is the port, already reported.
		if c.TargetPort != nil && (sp.targetPort < 1 || sp.targetPort > 65535) {
			p.add(src, joinPath(at, "targetPort"), "must be between 1 and 65535")
			targetOK = false
		}
		if sp.protocol != "TCP" && sp.protocol != "UDP" {
			p.add(src, joinPath(at, "protocol"), "want TCP or UDP")
			pairOK = false
		}
		if !pairOK {
			continue
		}
		// Kusion rejects a port given twice for a protocol even when one is
		// public and one private: both would be the same port of the app.
		key := strconv.Itoa(sp.port) + "-" + sp.protocol
		if seen[key] {
			p.add(src, at, "port-protocol pair must not be duplicate")
			continue
		}
		seen[key] = true
		if targetOK {
			out = append(out, sp)
		}
	}
	if err := p.err(); err != nil {
		return nil, err
	}
	return out, nil
}
