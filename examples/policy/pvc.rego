# Deleting a PersistentVolumeClaim may delete its data: only a claim whose
# released manifest says so may go.
package main

allow_delete_path := `metadata.annotations["kusion.io/allow-delete"]`

deny contains {"msg": msg, "rule": "pvc-deletion", "resource": id} if {
	some id, step in input.preview.changeSteps
	step.action == "Delete"
	step.from.attributes.kind == "PersistentVolumeClaim"
	not released_allow_delete(step)
	msg := sprintf("%s: deleting a PersistentVolumeClaim needs the annotation kusion.io/allow-delete: \"true\" in the released manifest", [id])
}

# The preview's from is the live object; the release's value of the
# annotation is the drift's from when someone changed it by hand.
released_allow_delete(step) if {
	not annotation_drifted(step)
	step.from.attributes.metadata.annotations["kusion.io/allow-delete"] == "true"
}

released_allow_delete(step) if {
	some d in step.drift
	d.path == allow_delete_path
	d.from == "true"
}

annotation_drifted(step) if {
	some d in step.drift
	d.path == allow_delete_path
}
