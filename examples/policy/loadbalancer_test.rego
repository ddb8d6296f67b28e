package main

lb_input(workspace, action) := {
	"workspace": workspace,
	"preview": {"changeSteps": {"v1:Service:shop:web": {
		"id": "v1:Service:shop:web",
		"action": action,
		"to": {"id": "v1:Service:shop:web", "type": "Kubernetes", "attributes": {
			"apiVersion": "v1", "kind": "Service",
			"metadata": {"name": "web", "namespace": "shop"},
			"spec": {"type": "LoadBalancer", "ports": [{"port": 80}]},
		}},
	}}},
}

test_loadbalancer_denied_in_dev if {
	some f in deny with input as lb_input("dev", "Create")
	f.rule == "no-loadbalancer-outside-prod"
	f.resource == "v1:Service:shop:web"
	contains(f.msg, "not in dev")
}

test_loadbalancer_allowed_in_prod if {
	count(deny) == 0 with input as lb_input("prod", "Create")
}

test_existing_loadbalancer_outside_prod_still_denied if {
	count(deny) == 1 with input as lb_input("staging", "UnChanged")
}

test_cluster_ip_allowed if {
	count(deny) == 0 with input as json.patch(lb_input("dev", "Update"), [{
		"op": "replace",
		"path": "/preview/changeSteps/v1:Service:shop:web/to/attributes/spec/type",
		"value": "ClusterIP",
	}])
}
