# A container without limits can take a node's whole CPU or memory.
package main

deny contains {"msg": msg, "rule": "container-limits", "resource": id, "container": container.name} if {
	some id, step in input.preview.changeSteps
	step.action != "Delete"
	step.to.attributes.kind == "Deployment"
	some container in step.to.attributes.spec.template.spec.containers
	missing := [r | some r in ["cpu", "memory"]; not container.resources.limits[r]]
	count(missing) > 0
	msg := sprintf("%s: container %s has no %s limit", [id, container.name, concat(" or ", missing)])
}
