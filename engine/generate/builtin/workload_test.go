package builtin

import (
	"testing"

	"github.com/kusionpr/kusionpr/engine/generate/module"
)

const serviceWorkload = `
_type: service.Service
replicas: 2
labels: {team: a}
annotations: {note: dev}
secrets: {tls: {type: certificate, data: {tls.crt: x, tls.key: y}}}
ports: [{port: 80}, {port: 53, protocol: UDP}]
containers:
  web:
    image: nginx:1.25
    command: [nginx]
    args: [-g, daemon off;]
    workingDir: /srv
    env:
      ZED: "1"
      ALPHA: secret://db/password
      MID: plain
    resources: {cpu: 500m-1, memory: 1Gi}
    files:
      /etc/app/a.conf: {content: "a: 1", mode: "0644"}
      /etc/app/b.conf: {content: ""}
      /etc/other/c.conf: {content: "c"}
      /etc/tls/key.pem: {contentFrom: secret://tls/tls.key, mode: "0400"}
    dirs:
      /var/run/tls: secret://certs
    readinessProbe:
      probeHandler:
        _type: service.container.probe.Http
        url: https://example.com:8443/healthz?full=1
        headers: {X-B: "2", X-A: "1"}
      periodSeconds: 5
      failureThreshold: 3
    livenessProbe:
      probeHandler: {_type: service.container.probe.Tcp, url: "localhost:8080"}
    startupProbe:
      probeHandler: {_type: service.container.probe.Exec, command: [cat, /tmp/ready]}
    lifecycle:
      preStop: {_type: service.container.probe.Exec, command: [sh, -c, sleep 5]}
      postStart: {_type: service.container.probe.Http, url: "http://localhost/started"}
  sidecar:
    image: busybox
`

func TestServiceDeployment(t *testing.T) {
	resp := generate(t, "service", request(serviceWorkload, serviceWorkload,
		"replicas: 5\nlabels: {team: b, tier: web}\nannotations: {owner: platform}\nimportedResources: {x: y}", ""))
	equal(t, "ids", ids(resp.Resources), []string{
		// web's files, numbered in path order per container.
		"v1:ConfigMap:proj:proj-dev-web-web-0",
		"v1:ConfigMap:proj:proj-dev-web-web-1",
		"v1:ConfigMap:proj:proj-dev-web-web-2",
		"apps/v1:Deployment:proj:proj-dev-web",
	})
	if resp.Patcher != nil {
		t.Errorf("patcher %#v", resp.Patcher)
	}
	cm := resp.Resources[1].Attributes
	equal(t, "empty file", get(t, cm, "data"), map[string]any{"b.conf": ""})

	d := resp.Resources[3]
	equal(t, "extensions", d.Extensions, map[string]any{"GVK": "apps/v1, Kind=Deployment", "kusion.io/is-workload": true})
	a := d.Attributes
	labels := map[string]any{
		"app.kubernetes.io/part-of": "proj",
		"app.kubernetes.io/name":    "web",
		"team":                      "a", // the developer's value wins
		"tier":                      "web",
	}
	equal(t, "labels", get(t, a, "metadata", "labels"), labels)
	equal(t, "annotations", get(t, a, "metadata", "annotations"), map[string]any{"note": "dev", "owner": "platform"})
	equal(t, "replicas", get(t, a, "spec", "replicas"), 2)
	equal(t, "selector", get(t, a, "spec", "selector"), map[string]any{"matchLabels": map[string]any{
		"app.kubernetes.io/part-of": "proj", "app.kubernetes.io/name": "web",
	}})
	equal(t, "pod labels", get(t, a, "spec", "template", "metadata", "labels"), labels)
	equal(t, "pod annotations", get(t, a, "spec", "template", "metadata", "annotations"), map[string]any{"note": "dev", "owner": "platform"})
	if has(t, a, "spec", "strategy") || has(t, a, "spec", "template", "spec", "topologySpreadConstraints") {
		t.Error("empty fields are written")
	}

	pod := get(t, a, "spec", "template", "spec")
	// Containers are sorted by name.
	equal(t, "sidecar", get(t, pod, "containers", 0), map[string]any{"name": "sidecar", "image": "busybox"})
	c := get(t, pod, "containers", 1)
	equal(t, "name", get(t, c, "name"), "web")
	equal(t, "command", get(t, c, "command"), []any{"nginx"})
	equal(t, "args", get(t, c, "args"), []any{"-g", "daemon off;"})
	equal(t, "workingDir", get(t, c, "workingDir"), "/srv")
	equal(t, "env keeps the order written", get(t, c, "env"), []any{
		map[string]any{"name": "ZED", "value": "1"},
		map[string]any{"name": "ALPHA", "valueFrom": map[string]any{"secretKeyRef": map[string]any{"name": "db", "key": "password"}}},
		map[string]any{"name": "MID", "value": "plain"},
	})
	equal(t, "resources", get(t, c, "resources"), map[string]any{
		"requests": map[string]any{"cpu": "500m"},
		"limits":   map[string]any{"cpu": "1", "memory": "1Gi"},
	})
	equal(t, "readinessProbe", get(t, c, "readinessProbe"), map[string]any{
		"httpGet": map[string]any{
			"scheme": "HTTPS",
			"host":   "example.com",
			"port":   8443,
			"path":   "/healthz?full=1",
			"httpHeaders": []any{
				map[string]any{"name": "X-A", "value": "1"},
				map[string]any{"name": "X-B", "value": "2"},
			},
		},
		"periodSeconds":    5,
		"failureThreshold": 3,
	})
	equal(t, "livenessProbe", get(t, c, "livenessProbe"), map[string]any{"tcpSocket": map[string]any{"port": 8080}})
	equal(t, "startupProbe", get(t, c, "startupProbe"), map[string]any{"exec": map[string]any{"command": []any{"cat", "/tmp/ready"}}})
	equal(t, "lifecycle", get(t, c, "lifecycle"), map[string]any{
		"preStop":   map[string]any{"exec": map[string]any{"command": []any{"sh", "-c", "sleep 5"}}},
		"postStart": map[string]any{"httpGet": map[string]any{"scheme": "HTTP", "port": 80, "path": "/started"}},
	})
	// a.conf and b.conf share a folder, so each is mounted as a file;
	// c.conf is alone and gets its folder, as in the catalog.
	equal(t, "mounts", get(t, c, "volumeMounts"), []any{
		map[string]any{"name": "proj-dev-web-web-0", "mountPath": "/etc/app/a.conf", "subPath": "a.conf"},
		map[string]any{"name": "proj-dev-web-web-1", "mountPath": "/etc/app/b.conf", "subPath": "b.conf"},
		map[string]any{"name": "proj-dev-web-web-2", "mountPath": "/etc/other"},
		map[string]any{"name": "tls", "mountPath": "/etc/tls/key.pem", "subPath": "tls.key"},
		map[string]any{"name": "certs", "mountPath": "/var/run/tls"},
	})
	equal(t, "volumes", get(t, pod, "volumes"), []any{
		map[string]any{"name": "proj-dev-web-web-0", "configMap": map[string]any{"name": "proj-dev-web-web-0", "defaultMode": 0o644}},
		map[string]any{"name": "proj-dev-web-web-1", "configMap": map[string]any{"name": "proj-dev-web-web-1"}},
		map[string]any{"name": "proj-dev-web-web-2", "configMap": map[string]any{"name": "proj-dev-web-web-2"}},
		map[string]any{"name": "tls", "secret": map[string]any{"secretName": "tls", "defaultMode": 0o400}},
		map[string]any{"name": "certs", "secret": map[string]any{"secretName": "certs"}},
	})
	equal(t, "configmap", resp.Resources[0].Attributes, map[string]any{
		"apiVersion": "v1",
		"kind":       "ConfigMap",
		"metadata":   map[string]any{"name": "proj-dev-web-web-0", "namespace": "proj"},
		"data":       map[string]any{"a.conf": "a: 1"},
	})
}

func TestServiceVariants(t *testing.T) {
	cases := []struct {
		name     string
		workload string
		// devOnly gives the workload as DevConfig alone.
		devOnly  bool
		platform string
		check    func(t *testing.T, a map[string]any, id string)
	}{
		{
			name:     "CollaSet from the platform",
			workload: "containers: {main: {image: nginx}}",
			platform: "type: CollaSet",
			check: func(t *testing.T, a map[string]any, id string) {
				equal(t, "id", id, "apps.kusionstack.io/v1alpha1:CollaSet:proj:proj-dev-web")
				equal(t, "apiVersion", a["apiVersion"], "apps.kusionstack.io/v1alpha1")
				equal(t, "selector", get(t, a, "spec", "selector", "matchLabels", "app.kubernetes.io/name"), "web")
			},
		},
		{
			name:     "developer's type wins, in any case",
			workload: "type: deployment\ncontainers: {main: {image: nginx}}",
			platform: "type: CollaSet",
			check: func(t *testing.T, a map[string]any, id string) {
				equal(t, "id", id, "apps/v1:Deployment:proj:proj-dev-web")
			},
		},
		{
			name:     "replicas from the platform",
			workload: "containers: {main: {image: nginx}}",
			platform: "replicas: 3",
			check: func(t *testing.T, a map[string]any, _ string) {
				equal(t, "replicas", get(t, a, "spec", "replicas"), 3)
			},
		},
		{
			name:     "no replicas, no annotations",
			workload: "containers: {main: {image: nginx}}",
			check: func(t *testing.T, a map[string]any, _ string) {
				if has(t, a, "spec", "replicas") || has(t, a, "metadata", "annotations") ||
					has(t, a, "spec", "template", "metadata", "annotations") || has(t, a, "spec", "template", "spec", "volumes") {
					t.Errorf("empty fields written: %#v", a)
				}
			},
		},
		{
			name:     "topology spread constraints as written",
			workload: "containers: {main: {image: nginx}}\ntopologySpreadConstraints: [{maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule}]",
			check: func(t *testing.T, a map[string]any, _ string) {
				equal(t, "tsc", get(t, a, "spec", "template", "spec", "topologySpreadConstraints"), []any{
					map[string]any{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"},
				})
			},
		},
		{
			name:     "workload given as DevConfig only",
			workload: "containers: {main: {image: nginx}}",
			devOnly:  true,
			check: func(t *testing.T, a map[string]any, id string) {
				equal(t, "id", id, "apps/v1:Deployment:proj:proj-dev-web")
			},
		},
		{
			name:     "files of one folder as a folder mount, a secret file in another",
			workload: "containers: {main: {image: nginx, files: {conf/app.yaml: {content: x}, /etc/s/k: {contentFrom: '${secret://s/k}'}}}}",
			check: func(t *testing.T, a map[string]any, _ string) {
				// Files are taken in the order of their keys as written.
				equal(t, "mounts", get(t, a, "spec", "template", "spec", "containers", 0, "volumeMounts"), []any{
					map[string]any{"name": "s", "mountPath": "/etc/s/k", "subPath": "k"},
					map[string]any{"name": "proj-dev-web-main-1", "mountPath": "/conf"},
				})
			},
		},
		{
			name:     "a secret file sharing its folder with a content file",
			workload: "containers: {main: {image: nginx, files: {/etc/a: {content: x}, /etc/b: {contentFrom: secret://s/b}}}}",
			check: func(t *testing.T, a map[string]any, _ string) {
				equal(t, "mount", get(t, a, "spec", "template", "spec", "containers", 0, "volumeMounts", 0),
					map[string]any{"name": "proj-dev-web-main-0", "mountPath": "/etc/a", "subPath": "a"})
			},
		},
		{
			name:     "two files of one secret share its volume",
			workload: "containers: {main: {image: nginx, files: {/a/x: {contentFrom: secret://s/x}, /b/y: {contentFrom: secret://s/y}}}}",
			check: func(t *testing.T, a map[string]any, _ string) {
				equal(t, "volumes", get(t, a, "spec", "template", "spec", "volumes"), []any{
					map[string]any{"name": "s", "secret": map[string]any{"secretName": "s"}},
				})
			},
		},
		{
			name:     "a volume name that is not a DNS label",
			workload: "containers: {main: {image: nginx, dirs: {/s: secret://my.secret}}}",
			check: func(t *testing.T, a map[string]any, _ string) {
				vol := get(t, a, "spec", "template", "spec", "volumes", 0).(map[string]any)
				name := vol["name"].(string)
				if name == "my.secret" || len(name) > 63 {
					t.Errorf("volume name %q", name)
				}
				equal(t, "secret", vol["secret"], map[string]any{"secretName": "my.secret"})
				equal(t, "mount", get(t, a, "spec", "template", "spec", "containers", 0, "volumeMounts", 0, "name"), name)
			},
		},
		{
			name:     "env without a value, numbers as written",
			workload: "containers: {main: {image: nginx, env: {EMPTY: , VERSION: 1.10}}}",
			check: func(t *testing.T, a map[string]any, _ string) {
				equal(t, "env", get(t, a, "spec", "template", "spec", "containers", 0, "env"), []any{
					map[string]any{"name": "EMPTY"},
					map[string]any{"name": "VERSION", "value": "1.10"},
				})
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			wl := "_type: service.Service\n" + c.workload
			req := request(wl, wl, c.platform, "")
			if c.devOnly {
				req = request("", wl, c.platform, "")
			}
			resp := generate(t, "service", req)
			w := resp.Resources[len(resp.Resources)-1]
			c.check(t, w.Attributes, w.ID)
		})
	}
}

func TestServiceErrors(t *testing.T) {
	wl := module.Workload
	pc := module.PlatformConfig
	cases := []struct {
		name     string
		workload string
		platform string
		want     []wantErr
	}{
		{"unsupported type", "type: StatefulSet\ncontainers: {main: {image: x}}", "",
			[]wantErr{{wl, "type", "unsupported service type StatefulSet, want Deployment or CollaSet"}}},
		{"unsupported platform type", "containers: {main: {image: x}}", "type: Job",
			[]wantErr{{pc, "type", "unsupported service type Job, want Deployment or CollaSet"}}},
		{"no containers", "replicas: 1", "",
			[]wantErr{{wl, "containers", "required: at least one container"}}},
		{"container without image, bad name", "containers: {Main_1: {command: [x]}}", "",
			[]wantErr{
				{wl, "containers.Main_1", "not a valid container name: want at most 63 lowercase letters, digits and '-', starting and ending with a letter or digit"},
				{wl, "containers.Main_1.image", "required"},
			}},
		{"unknown field", "containers: {main: {imag: x}}", "",
			[]wantErr{{wl, "containers.main.imag", "unknown field (want one of*"}}},
		{"wrong kind", "replicas: many\ncontainers: {main: {image: x}}", "replicas: [1]",
			[]wantErr{{wl, "replicas", "want an integer, got a string"}, {pc, "replicas", "want an integer, got a list"}}},
		{"negative replicas", "replicas: -1\ncontainers: {main: {image: x}}", "",
			[]wantErr{{wl, "replicas", "must not be negative"}}},
		{"bad secret env, env twice, env not a string", "containers: {main: {image: x, env: {A: secret://only-name, B: x, B: y, C: [1]}}}", "",
			[]wantErr{
				{wl, "containers.main.env.A", "want secret://<secret name>/<key>"},
				{wl, "containers.main.env.B", "given twice"},
				{wl, "containers.main.env.C", "want a string"},
			}},
		{"env not a mapping", "containers: {main: {image: x, env: [A=1]}}", "",
			[]wantErr{{wl, "containers.main.env", "want a mapping of variable names to values"}}},
		{"bad resources", "containers: {main: {image: x, resources: {cpu: lots, memory: 2Gi-1Gi, gpu: 1-2-3}}}", "",
			[]wantErr{
				{wl, "containers.main.resources.cpu", `"lots" is not a quantity such as 500m or 1Gi`},
				{wl, "containers.main.resources.gpu", "want a limit (1Gi) or a request and a limit (500m-1)"},
				{wl, "containers.main.resources.memory", "the request 2Gi is more than the limit 1Gi"},
			}},
		{"bad ports", "containers: {main: {image: x}}\nports: [{port: 0}, {port: 80, targetPort: 70000, protocol: SCTP}, {port: 8080}, {port: 8080}]", "",
			[]wantErr{
				{wl, "ports[0].port", "must be between 1 and 65535"},
				{wl, "ports[1].targetPort", "must be between 1 and 65535"},
				{wl, "ports[1].protocol", "want TCP or UDP"},
				{wl, "ports[3]", "port-protocol pair must not be duplicate"},
			}},
		{"files", "containers: {main: {image: x, files: {/etc/: {content: x}, /a: {content: x, mode: rw}, /b: {content: x, mode: '01777'}, /c: {}, /d: {content: x, contentFrom: secret://s/k}, /e: {contentFrom: http://x}}}}", "",
			[]wantErr{
				{wl, "containers.main.files./a.mode", "want a file mode such as 0644"},
				{wl, "containers.main.files./b.mode", "must be between 0 and 0777"},
				{wl, "containers.main.files./c", "give content or contentFrom"},
				{wl, "containers.main.files./d", "give content or contentFrom, not both"},
				{wl, "containers.main.files./e.contentFrom", "want secret://<secret name>/<key>"},
				{wl, "containers.main.files./etc/", "the path must end with a file name"},
			}},
		{"dirs and clashing mounts", "containers: {main: {image: x, dirs: {/a: 'secret://s/k', /b: secret://s}, files: {/b: {contentFrom: secret://t/k}}}}", "",
			[]wantErr{
				{wl, "containers.main.dirs./a", "want secret://<secret name>"},
				{wl, "containers.main.dirs./b", "mounts at /b, as containers.main.files./b does"},
			}},
		{"one secret with two modes", "containers: {main: {image: x, files: {/a: {contentFrom: secret://s/a, mode: '0400'}, /b: {contentFrom: secret://s/b}}}}", "",
			[]wantErr{{wl, "containers.main.files./b", "volume s is already mounted with another mode; give the files of one secret the same mode"}}},
		{"probes", `containers: {main: {image: x,
  readinessProbe: {periodSeconds: 1},
  livenessProbe: {probeHandler: {url: http://x}},
  startupProbe: {probeHandler: {_type: service.container.probe.Grpc}}}}`, "",
			[]wantErr{
				{wl, "containers.main.readinessProbe.probeHandler", "required"},
				{wl, "containers.main.livenessProbe.probeHandler._type", "required: want service.container.probe.Http, service.container.probe.Exec or service.container.probe.Tcp"},
				{wl, "containers.main.startupProbe.probeHandler._type", "unsupported handler service.container.probe.Grpc: want service.container.probe.Http, service.container.probe.Exec or service.container.probe.Tcp"},
			}},
		{"probe handlers", `containers: {main: {image: x,
  readinessProbe: {probeHandler: {_type: service.container.probe.Http, url: "ftp://x", command: [x]}, timeoutSeconds: -1},
  livenessProbe: {probeHandler: {_type: service.container.probe.Exec}},
  startupProbe: {probeHandler: {_type: service.container.probe.Tcp, url: "x:y:z"}}}}`, "",
			[]wantErr{
				{wl, "containers.main.readinessProbe.probeHandler.command", "not used by Http handlers"},
				{wl, "containers.main.readinessProbe.probeHandler.url", "want an http:// or https:// URL such as http://localhost:8080/healthz"},
				{wl, "containers.main.readinessProbe.timeoutSeconds", "must not be negative"},
				{wl, "containers.main.livenessProbe.probeHandler.command", "required"},
				{wl, "containers.main.startupProbe.probeHandler.url", "want host:port, such as localhost:8080"},
			}},
		{"lifecycle has no tcp", "containers: {main: {image: x, lifecycle: {preStop: {_type: service.container.probe.Tcp, url: ':80'}}}}", "",
			[]wantErr{{wl, "containers.main.lifecycle.preStop._type", "unsupported handler service.container.probe.Tcp: want service.container.probe.Http or service.container.probe.Exec"}}},
		{"labels the selector needs", "containers: {main: {image: x}}\nlabels: {app.kubernetes.io/name: other}", "labels: {app.kubernetes.io/part-of: other}",
			[]wantErr{
				{wl, "labels.app.kubernetes.io/name", `must be "web" or left out: the workload selects its pods by it`},
				{pc, "labels.app.kubernetes.io/part-of", `must be "proj" or left out: the workload selects its pods by it`},
			}},
		{"unknown platform field", "containers: {main: {image: x}}", "replica: 1",
			[]wantErr{{pc, "replica", "unknown field (want one of annotations, importedResources, labels, replicas, type)"}}},
		{"schedule is a job's", "schedule: '* * * * *'\ncontainers: {main: {image: x}}", "",
			[]wantErr{{wl, "schedule", "unknown field*"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := "_type: service.Service\n" + c.workload
			checkErrors(t, "service", request(w, w, c.platform, ""), c.want)
		})
	}
}

func TestJob(t *testing.T) {
	cases := []struct {
		name     string
		workload string
		platform string
		wantIDs  []string
		check    func(t *testing.T, a map[string]any)
	}{
		{
			name:     "job",
			workload: "replicas: 3\nlabels: {team: a}\ncontainers: {main: {image: busybox, command: [echo, hi], files: {/etc/x: {content: x}}}}",
			platform: "annotations: {owner: platform}",
			wantIDs:  []string{"v1:ConfigMap:proj:proj-dev-web-main-0", "batch/v1:Job:proj:proj-dev-web"},
			check: func(t *testing.T, a map[string]any) {
				equal(t, "labels", get(t, a, "metadata", "labels"), map[string]any{
					"app.kubernetes.io/part-of": "proj", "app.kubernetes.io/name": "web", "team": "a",
				})
				equal(t, "annotations", get(t, a, "metadata", "annotations"), map[string]any{"owner": "platform"})
				spec := get(t, a, "spec").(map[string]any)
				if _, ok := spec["replicas"]; ok {
					t.Error("a Job has no replicas")
				}
				if _, ok := spec["selector"]; ok {
					t.Error("a Job's selector is the API server's")
				}
				equal(t, "restartPolicy", get(t, spec, "template", "spec", "restartPolicy"), "Never")
				equal(t, "pod labels", get(t, spec, "template", "metadata", "labels", "team"), "a")
				equal(t, "volume", get(t, spec, "template", "spec", "volumes", 0, "name"), "proj-dev-web-main-0")
			},
		},
		{
			name:     "cronjob",
			workload: "schedule: '0 * * * *'\ncontainers: {main: {image: busybox}}",
			wantIDs:  []string{"batch/v1:CronJob:proj:proj-dev-web"},
			check: func(t *testing.T, a map[string]any) {
				equal(t, "spec", get(t, a, "spec"), map[string]any{
					"schedule": "0 * * * *",
					"jobTemplate": map[string]any{"spec": map[string]any{"template": map[string]any{
						"metadata": map[string]any{"labels": map[string]any{"app.kubernetes.io/part-of": "proj", "app.kubernetes.io/name": "web"}},
						"spec": map[string]any{
							"containers":    []any{map[string]any{"name": "main", "image": "busybox"}},
							"restartPolicy": "Never",
						},
					}}},
				})
			},
		},
		{
			// A Job's selector is generated, so its pods may carry any labels.
			name:     "job labels may override the app labels",
			workload: "labels: {app.kubernetes.io/name: other}\ncontainers: {main: {image: busybox}}",
			wantIDs:  []string{"batch/v1:Job:proj:proj-dev-web"},
			check: func(t *testing.T, a map[string]any) {
				equal(t, "name label", get(t, a, "metadata", "labels", "app.kubernetes.io/name"), "other")
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			wl := "_type: job.Job\n" + c.workload
			resp := generate(t, "job", request(wl, wl, c.platform, ""))
			equal(t, "ids", ids(resp.Resources), c.wantIDs)
			w := resp.Resources[len(resp.Resources)-1]
			equal(t, "is-workload", w.Extensions["kusion.io/is-workload"], true)
			c.check(t, w.Attributes)
		})
	}
}

func TestJobErrors(t *testing.T) {
	wl := module.Workload
	cases := []struct {
		name, workload, platform string
		want                     []wantErr
	}{
		{"no containers", "schedule: x", "", []wantErr{{wl, "containers", "required: at least one container"}}},
		{"a service's fields", "type: Deployment\ncontainers: {main: {image: x}}", "", []wantErr{{wl, "type", "unknown field*"}}},
		{"platform type is a service's", "containers: {main: {image: x}}", "type: CollaSet",
			[]wantErr{{module.PlatformConfig, "type", "unknown field (want one of annotations, importedResources, labels, replicas)"}}},
		{"bad env", "containers: {main: {image: x, env: {S: 'secret://a/b/c'}}}", "", []wantErr{{wl, "containers.main.env.S", "want secret://<secret name>/<key>"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := "_type: job.Job\n" + c.workload
			checkErrors(t, "job", request(w, w, c.platform, ""), c.want)
		})
	}
}
