#!/usr/bin/env bash
# make demo: the quickstart stack against the local cluster, end to end. It
# builds and starts the cluster alone; make test builds the rest.
set -euo pipefail
cd "$(dirname "$0")/.."
PREFIX=demo
# The action's build log is this checkout's: another checkout's demo builds its own.
LOGS=$PWD/.logs
. hack/steps.sh
t0=$SECONDS
bash hack/testenv.sh start-cluster
eval "$(bash hack/testenv.sh env)"
export KUBECONFIG=$KUSIONPR_TEST_KUBECONFIG
store="file://$PWD/.kusion-demo"
mkdir -p .kusion-demo
step build-action go build -v -o .kusion-demo/action ./cmd/action
stack=examples/quickstart/dev

printf '\n==> The pull-request comment a preview of %s would post:\n\n' "$stack"
.kusion-demo/action preview --stack "$stack" --backend "$store" -o markdown
printf '\n==> Applying %s\n\n' "$stack"
.kusion-demo/action apply --stack "$stack" --backend "$store" --yes -o text
printf '\n==> Preview again: nothing should change\n\n'
.kusion-demo/action preview --stack "$stack" --backend "$store" -o text
printf '\nReleases are in %s/releases/quickstart/default/ (Kusion'"'"'s layout).\n' "$PWD/.kusion-demo"

# A Kusion project as it is: main.k in KCL, each stack's kcl.mod naming kam
# from GitHub and service and network from ghcr.io, served here by a local
# git server and registry under those names (the mirror setting, as an
# air-gapped operator's).
bash hack/testenv.sh start-kcl
eval "$(bash hack/testenv.sh env)"
git_host=${KUSIONPR_TEST_GIT_URL#http://}
export KUSIONPR_KCL_ALLOW="$KUSIONPR_TEST_OCI_REGISTRY/kusionstack,$git_host/KusionStack"
export KUSIONPR_KCL_MIRRORS="ghcr.io/kusionstack=$KUSIONPR_TEST_OCI_REGISTRY/kusionstack,github.com/KusionStack=$git_host/KusionStack"
export KUSIONPR_KCL_CACHE=$PWD/.kusion-demo/kcl
kstack=examples/kcl/dev
printf '\n==> The pull-request comment a preview of %s (main.k with base.k) would post:\n\n' "$kstack"
.kusion-demo/action preview --stack "$kstack" --backend "$store" -o markdown
printf '\n==> Applying %s\n\n' "$kstack"
.kusion-demo/action apply --stack "$kstack" --backend "$store" --yes -o text
printf '\nReleases are in %s/releases/hello/default/.\n' "$PWD/.kusion-demo"
printf 'Remove what the demo created with:\n  KUBECONFIG=%s .kusion-demo/action destroy --stack %s --backend %s --yes\n' "$KUBECONFIG" "$stack" "$store"
printf '  KUBECONFIG=%s .kusion-demo/action destroy --stack %s --backend %s --yes\n' "$KUBECONFIG" "$kstack" "$store"
log "done in $(since "$t0")"
printf '\nThe commands of docs/getting-started.md (On your machine) reach this cluster once your shell has:\n'
# When PATH had no kubectl, the cluster's build made one; this line finds it.
bash hack/testenv.sh env | sed -n 's/^export PATH=/  export PATH=/p'
printf '  export KUBECONFIG=%s\n' "$KUBECONFIG"
# The commands' default store is $KUSION_HOME's folder: the demo's, then.
printf '  export KUSION_HOME=%s\n' "$PWD/.kusion-demo"
