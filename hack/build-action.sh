#!/usr/bin/env bash
# Builds the action's static binary into OUT (default bin/action). The
# Dockerfile runs it; CI runs it outside Docker too.
set -euo pipefail
out=${1:-bin/action}
cd "$(dirname "$0")/.."
CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$out" ./cmd/action
echo "build-action: $out"
