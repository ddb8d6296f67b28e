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
printf 'Remove what the demo created with:\n  KUBECONFIG=%s .kusion-demo/action destroy --stack %s --backend %s --yes\n' "$KUBECONFIG" "$stack" "$store"
log "done in $(since "$t0")"
printf '\nThe README'"'"'s "Using it" commands reach this cluster once your shell has:\n'
# When PATH had no kubectl, the cluster's build made one; this line finds it.
bash hack/testenv.sh env | sed -n 's/^export PATH=/  export PATH=/p'
printf '  export KUBECONFIG=%s\n' "$KUBECONFIG"
# The commands' default store is $KUSION_HOME's folder: the demo's, then.
printf '  export KUSION_HOME=%s\n' "$PWD/.kusion-demo"
