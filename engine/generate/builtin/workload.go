package builtin

import (
	"context"
	"maps"
	"slices"
	"strings"

	"github.com/kusionpr/kusionpr/engine/generate/module"
	"github.com/kusionpr/kusionpr/model"
)

// workloadBase is what the catalog's service and job schemas share
// (kam WorkloadBase).
type workloadBase struct {
	Type        string                     `json:"_type"`
	Containers  map[string]containerConfig `json:"containers"`
	Replicas    *int32                     `json:"replicas"`
	Labels      map[string]string          `json:"labels"`
	Annotations map[string]string          `json:"annotations"`
	// Secrets become Secrets in the generator itself, as in Kusion.
	Secrets any `json:"secrets"`
	// TopologySpreadConstraints go into the pod spec as written.
	TopologySpreadConstraints []any `json:"topologySpreadConstraints"`
}

// workloadPlatform is a workload module's block in the workspace.
type workloadPlatform struct {
	Replicas    *int32            `json:"replicas"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
	// ImportedResources is the generator's business.
	ImportedResources any `json:"importedResources"`
}

// workloadInput picks the workload document: the generator gives it as
// both Workload and DevConfig to the workload's own module. Either way it
// is the workload the user wrote, so its mistakes are reported there.
func workloadInput(req module.Request) []byte {
	if !empty(req.Workload) {
		return req.Workload
	}
	return req.DevConfig
}

// workloadMeta is what a workload's object and its pods are labelled with.
type workloadMeta struct {
	labels, annotations map[string]string
}

// completeMeta merges the workspace's labels and annotations under the
// developer's: the platform fills in, the developer decides.
func completeMeta(req module.Request, dev workloadBase, plat workloadPlatform) workloadMeta {
	return workloadMeta{
		labels:      mergeStrings(uniqueLabels(req), plat.Labels, dev.Labels),
		annotations: mergeStrings(plat.Annotations, dev.Annotations),
	}
}

// checkSelectorLabels reports labels that would take the pods out of their
// own selector: the API server would refuse the workload.
func checkSelectorLabels(req module.Request, dev workloadBase, plat workloadPlatform) error {
	var p problems
	unique := uniqueLabels(req)
	for _, k := range slices.Sorted(maps.Keys(unique)) {
		src, v, ok := module.Workload, "", false
		if v, ok = dev.Labels[k]; !ok {
			src = module.PlatformConfig
			v, ok = plat.Labels[k]
		}
		if ok && v != unique[k] {
			p.add(src, joinPath("labels", k), "must be %q or left out: the workload selects its pods by it", unique[k])
		}
	}
	return p.err()
}

func (m workloadMeta) object(req module.Request) objectMeta {
	return objectMeta{name: uniqueName(req), namespace: req.Project, labels: m.labels, annotations: m.annotations}
}

// template is a pod template; the extra fields (restartPolicy) go into its spec.
func (m workloadMeta) template(pd pod, tsc []any, extra map[string]any) map[string]any {
	meta := map[string]any{"labels": anyMap(m.labels)}
	if a := anyMap(m.annotations); a != nil {
		meta["annotations"] = a
	}
	spec := map[string]any{"containers": pd.containers}
	if len(pd.volumes) > 0 {
		spec["volumes"] = pd.volumes
	}
	if len(tsc) > 0 {
		spec["topologySpreadConstraints"] = tsc
	}
	for _, k := range slices.Sorted(maps.Keys(extra)) {
		spec[k] = extra[k]
	}
	return map[string]any{"metadata": meta, "spec": spec}
}

// markWorkload tells the generator which resource the accessories patch.
func markWorkload(r model.Resource) model.Resource {
	r.Extensions[isWorkloadKey] = true
	return r
}

// serviceModule is the catalog's service module: a long-running workload, a
// Deployment or a KusionStack CollaSet.
type serviceModule struct{}

type serviceConfig struct {
	workloadBase
	Kind  string       `json:"type"`
	Ports []portConfig `json:"ports"`
}

type servicePlatform struct {
	workloadPlatform
	Type string `json:"type"`
}

const (
	kindDeployment = "Deployment"
	kindCollaSet   = "CollaSet"
	collaSetAPI    = "apps.kusionstack.io/v1alpha1"
)

func (serviceModule) Generate(_ context.Context, req module.Request) (*module.Response, error) {
	in := workloadInput(req)
	if empty(in) {
		return &module.Response{}, nil
	}
	var dev serviceConfig
	var plat servicePlatform
	var p problems
	p.addErr(module.Decode(module.Workload, in, &dev))
	p.addErr(module.Decode(module.PlatformConfig, req.PlatformConfig, &plat))
	if err := p.err(); err != nil {
		return nil, err
	}

	kind, kindSrc := dev.Kind, module.Workload
	if kind == "" {
		kind, kindSrc = plat.Type, module.PlatformConfig
	}
	switch strings.ToLower(kind) {
	case "", "deployment":
		kind = kindDeployment
	case "collaset":
		kind = kindCollaSet
	default:
		p.add(kindSrc, "type", "unsupported service type %s, want Deployment or CollaSet", kind)
	}
	replicas, replicasSrc := dev.Replicas, module.Workload
	if replicas == nil {
		replicas, replicasSrc = plat.Replicas, module.PlatformConfig
	}
	if replicas != nil && *replicas < 0 {
		p.add(replicasSrc, "replicas", "must not be negative")
	}
	// The ports become Services in the network module; they are checked
	// here because the workload is where they were written.
	_, err := completePorts(module.Workload, "ports", dev.Ports)
	p.addErr(err)
	p.addErr(checkSelectorLabels(req, dev.workloadBase, plat.workloadPlatform))
	pd, err := buildPod(module.Workload, req, dev.Containers)
	p.addErr(err)
	if err := p.err(); err != nil {
		return nil, err
	}

	meta := completeMeta(req, dev.workloadBase, plat.workloadPlatform)
	spec := map[string]any{
		"selector": map[string]any{"matchLabels": anyMap(uniqueLabels(req))},
		"template": meta.template(pd, dev.TopologySpreadConstraints, nil),
	}
	if replicas != nil {
		spec["replicas"] = int(*replicas)
	}
	apiVersion := "apps/v1"
	if kind == kindCollaSet {
		apiVersion = collaSetAPI
	}
	resources := append(model.Resources{}, pd.configMaps...)
	resources = append(resources, markWorkload(kubeResource(apiVersion, kind, meta.object(req), map[string]any{"spec": spec})))
	return &module.Response{Resources: resources}, nil
}

// jobModule is the catalog's job module: a Job, or a CronJob when the
// workload has a schedule.
type jobModule struct{}

type jobConfig struct {
	workloadBase
	Schedule string `json:"schedule"`
}

func (jobModule) Generate(_ context.Context, req module.Request) (*module.Response, error) {
	in := workloadInput(req)
	if empty(in) {
		return &module.Response{}, nil
	}
	var dev jobConfig
	var plat workloadPlatform
	var p problems
	p.addErr(module.Decode(module.Workload, in, &dev))
	p.addErr(module.Decode(module.PlatformConfig, req.PlatformConfig, &plat))
	if err := p.err(); err != nil {
		return nil, err
	}
	pd, err := buildPod(module.Workload, req, dev.Containers)
	if err != nil {
		return nil, err
	}

	meta := completeMeta(req, dev.workloadBase, plat)
	jobSpec := map[string]any{
		"template": meta.template(pd, dev.TopologySpreadConstraints, map[string]any{"restartPolicy": "Never"}),
	}
	var workload model.Resource
	if dev.Schedule == "" {
		workload = kubeResource("batch/v1", "Job", meta.object(req), map[string]any{"spec": jobSpec})
	} else {
		workload = kubeResource("batch/v1", "CronJob", meta.object(req), map[string]any{"spec": map[string]any{
			"schedule":    dev.Schedule,
			"jobTemplate": map[string]any{"spec": jobSpec},
		}})
	}
	resources := append(model.Resources{}, pd.configMaps...)
	resources = append(resources, markWorkload(workload))
	return &module.Response{Resources: resources}, nil
}
