package main

drift_input(action, drift) := {"preview": {"changeSteps": {"apps/v1:Deployment:shop:web": {
	"id": "apps/v1:Deployment:shop:web",
	"action": action,
	"drift": drift,
}}}}

replicas_drift := [{"path": "spec.replicas", "op": "replace", "from": 2, "to": 5}]

test_update_over_drift_warns if {
	warn == {"apps/v1:Deployment:shop:web: this update overwrites changes made outside a release: spec.replicas"} with input as drift_input("Update", replicas_drift)
}

test_unchanged_drifted_resource_not_warned if {
	count(warn) == 0 with input as drift_input("UnChanged", replicas_drift)
}

test_update_without_drift_not_warned if {
	count(warn) == 0 with input as drift_input("Update", [])
}

test_drift_warning_does_not_deny if {
	count(deny) == 0 with input as drift_input("Update", replicas_drift)
}
