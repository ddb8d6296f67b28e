#!/usr/bin/env bash
# Lints every workflow file of the repository with actionlint: ours in
# .github/workflows and the examples users copy, in .github/workflow-examples
# (actionlint reads only .github/workflows by itself, so the files are named).
# The `run:` scripts are checked by shellcheck, installed from Debian's
# packages when missing, as GitHub's hosted runners have it: a run here and a
# run in CI check the same things. actionlint is built once from the Go
# module proxy at a pinned version and cached under $CACHE/tools, holding the
# cache's lock (hack/steps.sh) while it builds.
set -euo pipefail

ACTIONLINT_VERSION=1.7.12
CACHE=${KUSIONPR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kusionpr}
TOOLS=$CACHE/tools
LOGS=$TOOLS/logs
ACTIONLINT=$TOOLS/actionlint-v$ACTIONLINT_VERSION/actionlint

PREFIX=lint-workflows
# log, die, step (a long command with a progress line every 30 s) and
# cache_lock.
. "$(dirname "${BASH_SOURCE[0]}")/steps.sh"

need_actionlint() {
  [ -x "$ACTIONLINT" ] && return
  cache_lock "hack/lint-workflows.sh (building actionlint)"
  # Built meanwhile by whoever held the lock.
  [ -x "$ACTIONLINT" ] && return
  command -v go >/dev/null 2>&1 || die "go is missing: actionlint is built from the Go module proxy"
  local dir tmp
  dir=$(dirname "$ACTIONLINT")
  mkdir -p "$dir"
  # Built into a folder of its own and moved in place when whole, so an
  # interrupted build never leaves a binary that looks ready.
  tmp=$(mktemp -d "$dir/.build.XXXXXX")
  step actionlint-build env GOBIN="$tmp" GOFLAGS= go install -trimpath \
    "github.com/rhysd/actionlint/cmd/actionlint@v$ACTIONLINT_VERSION"
  mv "$tmp/actionlint" "$ACTIONLINT"
  rm -rf "$tmp"
}

cd "$(dirname "${BASH_SOURCE[0]}")/.."
need_pkg shellcheck "actionlint checks run: scripts with it" shellcheck
need_actionlint

shopt -s nullglob
files=(.github/workflows/*.yml .github/workflows/*.yaml .github/workflow-examples/*.yml .github/workflow-examples/*.yaml)
[ "${#files[@]}" -gt 0 ] || die "no workflow files found under .github/"
# -pyflakes= : no workflow has a Python step, and a pyflakes on one machine
# only would make runs disagree.
"$ACTIONLINT" -shellcheck="$(command -v shellcheck)" -pyflakes= "${files[@]}"
log "${#files[@]} workflow files pass actionlint v$ACTIONLINT_VERSION"
