# A Service of type LoadBalancer gets a public address: only prod may have one.
package main

deny contains {"msg": msg, "rule": "no-loadbalancer-outside-prod", "resource": id} if {
	input.workspace != "prod"
	some id, step in input.preview.changeSteps
	step.action != "Delete"
	step.to.attributes.kind == "Service"
	step.to.attributes.spec.type == "LoadBalancer"
	msg := sprintf("%s: a Service of type LoadBalancer is allowed in workspace prod only, not in %s", [id, input.workspace])
}
