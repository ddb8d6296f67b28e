package builtin

import (
	"context"
	"fmt"
	"strings"

	"github.com/kusionpr/kusionpr/engine/generate/module"
	"github.com/kusionpr/kusionpr/model"
)

// networkModule is the catalog's network module: the app's ports become a
// private (ClusterIP) and a public (LoadBalancer) Service.
type networkModule struct{}

type networkConfig struct {
	Type  string       `json:"_type"`
	Ports []portConfig `json:"ports"`
}

// loadBalancerConfig is what the platform says about public ports: which
// cloud's load balancer, and its labels and annotations.
type loadBalancerConfig struct {
	Type        string            `json:"type"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
}

// networkPlatform takes both shapes in use: the catalog's code reads the
// block under port, kusionstack.io's workspace reference writes it flat.
type networkPlatform struct {
	Port *loadBalancerConfig `json:"port"`
	loadBalancerConfig
	ImportedResources any `json:"importedResources"`
}

func (networkModule) Generate(_ context.Context, req module.Request) (*module.Response, error) {
	var dev networkConfig
	var plat networkPlatform
	var p problems
	p.addErr(module.Decode(module.DevConfig, req.DevConfig, &dev))
	p.addErr(module.Decode(module.PlatformConfig, req.PlatformConfig, &plat))
	if err := p.err(); err != nil {
		return nil, err
	}
	ports, err := completePorts(module.DevConfig, "ports", dev.Ports)
	p.addErr(err)

	lb, lbPath := plat.loadBalancerConfig, ""
	if plat.Port != nil {
		if lb.Type != "" || lb.Labels != nil || lb.Annotations != nil {
			p.add(module.PlatformConfig, "port", "give type, labels and annotations either under port or at the top level, not both")
		}
		lb, lbPath = *plat.Port, "port"
	}
	var private, public []servicePort
	for _, sp := range ports {
		if sp.public {
			public = append(public, sp)
		} else {
			private = append(private, sp)
		}
	}
	if len(public) > 0 {
		switch lb.Type {
		case "aws", "alicloud":
		case "":
			p.add(module.PlatformConfig, joinPath(lbPath, "type"), "required when a port is public")
		default:
			p.add(module.PlatformConfig, joinPath(lbPath, "type"), "want aws or alicloud")
		}
	}

	// The Services carry the workload's labels and annotations, so that
	// they are found and treated as the workload is.
	var wlLabels, wlAnnotations map[string]string
	wl, err := topLevel(module.Workload, req.Workload)
	p.addErr(err)
	p.addErr(decodeNode(module.Workload, wl["labels"], "labels", &wlLabels))
	p.addErr(decodeNode(module.Workload, wl["annotations"], "annotations", &wlAnnotations))
	if err := p.err(); err != nil {
		return nil, err
	}

	out := &module.Response{}
	labels := mergeStrings(uniqueLabels(req), wlLabels)
	if len(private) > 0 {
		out.Resources = append(out.Resources, portService(req, "private", "ClusterIP", private, labels, wlAnnotations))
	}
	if len(public) > 0 {
		out.Resources = append(out.Resources, portService(req, "public", "LoadBalancer", public,
			mergeStrings(labels, lb.Labels), mergeStrings(wlAnnotations, lb.Annotations)))
	}
	return out, nil
}

func portService(req module.Request, suffix, typ string, ports []servicePort, labels, annotations map[string]string) model.Resource {
	name := uniqueName(req) + "-" + suffix
	list := make([]any, len(ports))
	for i, sp := range ports {
		proto := strings.ToLower(sp.protocol)
		// A port name is a DNS label; the catalog's long form only fits
		// short app names, and within one Service the port and protocol
		// are unique on their own.
		portName := fmt.Sprintf("%s-%d-%s", name, sp.port, proto)
		if len(portName) > maxDNSLabel {
			portName = fmt.Sprintf("%d-%s", sp.port, proto)
		}
		list[i] = map[string]any{
			"name":       portName,
			"port":       sp.port,
			"targetPort": sp.targetPort,
			"protocol":   sp.protocol,
		}
	}
	return kubeResource("v1", "Service", objectMeta{
		name:        name,
		namespace:   req.Project,
		labels:      labels,
		annotations: annotations,
	}, map[string]any{"spec": map[string]any{
		"type":     typ,
		"selector": anyMap(uniqueLabels(req)),
		"ports":    list,
	}})
}
