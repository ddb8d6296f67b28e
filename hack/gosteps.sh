#!/usr/bin/env bash
# The long go commands of make vet and make test, as steps of hack/steps.sh:
# each prints a line at least every 30 s saying how far it is, "412 of 1536
# packages compiled", against what the go command itself lists with -n
# (nothing when all is cached), then its time and CPU time. Their full output
# is in .logs/ of the checkout; what a person needs (vet's findings, a fuzz
# target's progress and failure, a compile error) is printed.
#
#   hack/gosteps.sh vet                        go vet ./...
#   hack/gosteps.sh fuzz TARGET PACKAGE TIME   go test -fuzz TARGET -fuzztime TIME PACKAGE:
#                                              its instrumented build first, counted,
#                                              then the fuzzing, shown as it comes
#   hack/gosteps.sh compile-tests FLAG...      compile what go test FLAG... ./... will,
#                                              counted, so that its run starts with
#                                              its packages' results (make test)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
PREFIX=go
LOGS=$PWD/.logs
# log, die, plan and step.
. hack/steps.sh

# go_vet: vet with -x, counting its compiles and vet runs; the findings, or
# a compile error, are shown by vet run again without -x (what passed is
# cached, so only what failed runs again).
go_vet() {
  plan vet-plan go vet -n ./...
  if ! step --keep-going vet go vet -x ./...; then
    go vet ./... || true
    die "go vet failed"
  fi
}

# go_fuzz TARGET PACKAGE TIME: the fuzz target's test binary, compiled with
# the fuzzing instrumentation (every package again: minutes from an empty
# build cache) and counted, then the fuzzing, whose own lines come every 3 s.
# A compile error shows in the second go command, as go prints it.
go_fuzz() {
  local target=$1 pkg=$2 time=$3 tmp
  tmp=$(mktemp -d)
  # shellcheck disable=SC2064 # the folder is known now
  trap "rm -rf '$tmp'" EXIT
  local build=(go test -c -o "$tmp/fuzz.test" -fuzz "^$target\$" "$pkg")
  plan "fuzz-$target-plan" "${build[@]:0:2}" -n "${build[@]:2}"
  # (go test vets the package under test itself; counted, it says little.)
  PLAN_VETS=''
  step --keep-going "fuzz-$target-build" "${build[@]:0:2}" -x "${build[@]:2}" || true
  if step --show --keep-going "fuzz-$target" go test -run '^$' -fuzz "^$target\$" -fuzztime "$time" "$pkg"; then
    return
  fi
  coordinator_deadline "$LOGS/fuzz-$target.log" || die "fuzz-$target failed (full output in $LOGS/fuzz-$target.log)"
  log "fuzz-$target: the failure is Go's fuzzing coordinator missing its own -fuzztime deadline (go.dev/issue/75804, fixed in Go 1.27), with no failing input: the corpus is run again to be sure"
  step "fuzz-$target-corpus" go test -run "^$target\$" "$pkg"
}

# coordinator_deadline LOG: whether a fuzz run's only failure is the bare
# "context deadline exceeded" Go 1.26's coordinator reports when a worker
# is still busy as -fuzztime ends, on a loaded machine. A real finding
# says "Failing input written to" (a crasher is kept in testdata/fuzz)
# or shows the target's own message, and is never taken for it.
coordinator_deadline() {
  local logf=$1
  ! grep -q 'Failing input written to' "$logf" &&
    [ "$(sed -n '/^--- FAIL: /,/^FAIL$/p' "$logf" | sed '1d;$d')" = "    context deadline exceeded" ]
}

# discard_stdout COMMAND...: COMMAND with its standard output thrown away.
discard_stdout() { "$@" >/dev/null; }

# compile_tests FLAG...: go list -export compiles each package go test
# FLAG... ./... builds, test variants included, and links nothing; go test
# then only links. A failure is left for go test to report.
compile_tests() {
  plan compile-tests-plan go list -n -export -deps -test "$@" ./...
  step --keep-going compile-tests discard_stdout go list -x -export -deps -test "$@" ./... ||
    log "compile-tests: go test says what failed"
}

case "${1:-}" in
  vet) go_vet ;;
  fuzz) [ $# -eq 4 ] || die "usage: $0 fuzz TARGET PACKAGE TIME"; go_fuzz "$2" "$3" "$4" ;;
  compile-tests) shift; compile_tests "$@" ;;
  *) echo "usage: $0 vet | fuzz TARGET PACKAGE TIME | compile-tests FLAG..." >&2; exit 2 ;;
esac
