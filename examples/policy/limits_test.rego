package main

deployment_input(containers) := {"workspace": "dev", "preview": {"changeSteps": {"apps/v1:Deployment:shop:web": {
	"id": "apps/v1:Deployment:shop:web",
	"action": "Update",
	"to": {"id": "apps/v1:Deployment:shop:web", "type": "Kubernetes", "attributes": {
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": {"name": "web", "namespace": "shop"},
		"spec": {"template": {"spec": {"containers": containers}}},
	}},
}}}}

test_limits_set_pass if {
	count(deny) == 0 with input as deployment_input([
		{"name": "web", "resources": {"limits": {"cpu": "500m", "memory": "256Mi"}}},
		{"name": "sidecar", "resources": {"limits": {"cpu": "50m", "memory": "32Mi"}}},
	])
}

test_missing_memory_limit_denied if {
	denies := deny with input as deployment_input([
		{"name": "web", "resources": {"limits": {"cpu": "500m", "memory": "256Mi"}}},
		{"name": "sidecar", "resources": {"limits": {"cpu": "50m"}}},
	])
	count(denies) == 1
	some f in denies
	f.rule == "container-limits"
	f.container == "sidecar"
	contains(f.msg, "no memory limit")
}

test_no_resources_names_both if {
	some f in deny with input as deployment_input([{"name": "web"}])
	contains(f.msg, "no cpu or memory limit")
}

test_deleted_deployment_not_judged if {
	count(deny) == 0 with input as {"preview": {"changeSteps": {"apps/v1:Deployment:shop:web": {
		"id": "apps/v1:Deployment:shop:web",
		"action": "Delete",
		"from": {"attributes": {"kind": "Deployment", "spec": {"template": {"spec": {"containers": [{"name": "web"}]}}}}},
	}}}}
}
