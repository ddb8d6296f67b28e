#!/usr/bin/env bash
# Builds the action's static binary into OUT (default bin/action) and, when
# BOT_OUT is given, the bot's (cmd/bot) too. The Dockerfile runs it; CI runs
# it outside Docker too.
#   hack/build-action.sh [OUT [BOT_OUT]]
set -euo pipefail
out=${1:-bin/action}
bot=${2:-}
cd "$(dirname "$0")/.."
CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$out" ./cmd/action
echo "build-action: $out"
if [ -n "$bot" ]; then
  CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$bot" ./cmd/bot
  echo "build-action: $bot"
fi
