package main

tf_input(provider) := {"workspace": "dev", "spec": {"resources": [
	{
		"id": "hashicorp:aws:aws_s3_bucket:logs",
		"type": "Terraform",
		"attributes": {"bucket": "logs"},
		"extensions": {"provider": "registry.terraform.io/hashicorp/aws/5.0.1", "resourceType": "aws_s3_bucket"},
	},
	{
		"id": "acme:thing:thing_x:x",
		"type": "Terraform",
		"attributes": {},
		"extensions": {"provider": provider, "resourceType": "thing_x"},
	},
	{"id": "v1:Namespace:shop", "type": "Kubernetes", "attributes": {"kind": "Namespace"}},
]}}

test_allowed_providers_pass if {
	count(deny) == 0 with input as tf_input("registry.terraform.io/hashicorp/random/3.6.0")
}

test_other_provider_denied if {
	denies := deny with input as tf_input("registry.terraform.io/acme/thing/1.0.0")
	count(denies) == 1
	some f in denies
	f.rule == "terraform-providers"
	f.resource == "acme:thing:thing_x:x"
	f.provider == "registry.terraform.io/acme/thing"
}

test_lookalike_namespace_denied if {
	count(deny) == 1 with input as tf_input("registry.terraform.io/hashicorp-evil/aws/5.0.1")
}

test_no_provider_denied if {
	some f in deny with input as tf_input("aws")
	contains(f.msg, "names no provider")
}
