# Terraform providers run code with the credentials they are given: only
# the ones the platform team vetted.
package main

allowed_providers := {
	"registry.terraform.io/hashicorp/aws",
	"registry.terraform.io/hashicorp/google",
	"registry.terraform.io/hashicorp/random",
	"registry.terraform.io/hashicorp/local",
}

deny contains {"msg": msg, "rule": "terraform-providers", "resource": r.id, "provider": source} if {
	some r in input.spec.resources
	r.type == "Terraform"
	source := provider_source(r)
	not allowed_providers[source]
	msg := sprintf("%s: provider %s is not in the allowed list", [r.id, source])
}

deny contains {"msg": msg, "rule": "terraform-providers", "resource": r.id} if {
	some r in input.spec.resources
	r.type == "Terraform"
	not provider_source(r)
	msg := sprintf("%s: names no provider (extensions.provider)", [r.id])
}

# registry.terraform.io/hashicorp/aws/5.0.1 is registry.terraform.io/hashicorp/aws.
provider_source(r) := concat("/", array.slice(parts, 0, 3)) if {
	parts := split(r.extensions.provider, "/")
	count(parts) >= 3
}
