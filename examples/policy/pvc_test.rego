package main

pvc_input(action, annotations, drift) := {"workspace": "dev", "preview": {"changeSteps": {"v1:PersistentVolumeClaim:shop:data": {
	"id": "v1:PersistentVolumeClaim:shop:data",
	"action": action,
	"from": {"id": "v1:PersistentVolumeClaim:shop:data", "type": "Kubernetes", "attributes": {
		"apiVersion": "v1", "kind": "PersistentVolumeClaim",
		"metadata": {"name": "data", "namespace": "shop", "annotations": annotations},
	}},
	"drift": drift,
}}}}

test_pvc_deletion_without_annotation_denied if {
	some f in deny with input as pvc_input("Delete", {}, [])
	f.rule == "pvc-deletion"
	f.resource == "v1:PersistentVolumeClaim:shop:data"
}

test_pvc_deletion_with_annotation_allowed if {
	count(deny) == 0 with input as pvc_input("Delete", {"kusion.io/allow-delete": "true"}, [])
}

test_pvc_annotation_other_value_denied if {
	count(deny) == 1 with input as pvc_input("Delete", {"kusion.io/allow-delete": "yes"}, [])
}

test_pvc_annotation_added_by_hand_denied if {
	count(deny) == 1 with input as pvc_input("Delete", {"kusion.io/allow-delete": "true"}, [{
		"path": `metadata.annotations["kusion.io/allow-delete"]`,
		"op": "add",
		"to": "true",
	}])
}

test_pvc_annotation_removed_by_hand_still_allowed if {
	count(deny) == 0 with input as pvc_input("Delete", {}, [{
		"path": `metadata.annotations["kusion.io/allow-delete"]`,
		"op": "remove",
		"from": "true",
	}])
}

test_pvc_update_allowed if {
	count(deny) == 0 with input as pvc_input("Update", {}, [])
}
