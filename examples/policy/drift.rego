# Applying over drift overwrites what someone changed by hand: say so.
package main

warn contains msg if {
	some id, step in input.preview.changeSteps
	step.action in {"Create", "Update", "Delete"}
	count(step.drift) > 0
	paths := [d.path | some d in step.drift]
	msg := sprintf("%s: this %s overwrites changes made outside a release: %s", [id, lower(step.action), concat(", ", paths)])
}
