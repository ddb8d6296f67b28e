#!/usr/bin/env bash
# The local test environment: a real etcd, kube-apiserver, kube-controller-manager,
# kube-scheduler and kwok (one simulated node), plus OpenTofu and the providers
# hashicorp/local and hashicorp/time in a filesystem mirror, so Terraform tests run
# without the public registry, plus three object stores on 127.0.0.1 for the
# backend tests: MinIO (S3), fake-gcs-server (GCS) and Azurite (Azure Blob),
# plus GitHub's REST description and webhook examples for the fake GitHub,
# plus the KCL package sources Kusion's stacks fetch from: a real OCI
# registry (CNCF Distribution's) and git's own smart-HTTP server, serving
# the packages of internal/testenv/kclpkgs under Kusion's names, plus the
# clouds' token services (internal/cloudfake), through which the API server
# accepts EKS, GKE and AKS tokens by its webhook token authenticator.
# Binaries are built once from the Go module proxy (Azurite comes from npm) and
# cached; later starts take about 15 s. A long step prints a line at least every
# 30 s (what it is doing, how far along, the elapsed time); its full output is
# in $CACHE/testenv/logs. kubectl comes from PATH, else it is built with the
# cluster.
#
# $CACHE is $KUSIONPR_CACHE, else ~/.cache/kusionpr. build, start,
# start-cluster, start-kcl and stop hold the cache's lock (hack/steps.sh) while they
# work: a second one, from make demo, make test or another checkout using the
# same cache, waits for it, saying who holds it. Everything is built into a
# temporary folder beside its place and renamed into it, so a build never
# removes or half-writes what another made. The servers are stopped by the
# process ids recorded when they were started, and only while each id is
# still the process started (its start time is recorded with it): never by
# name, so an etcd or MinIO that something else runs is never touched.
# An environment already running from the same cache is reused, whichever
# checkout started it; "stop" then "start" starts this checkout's.
#
#   hack/testenv.sh build           build or reuse the cached binaries
#   hack/testenv.sh start           build if needed, start everything, write the kubeconfig
#   hack/testenv.sh start-cluster   the same for the cluster alone (what make demo uses)
#   hack/testenv.sh start-kcl       KCL's runtime, and the registry and git server serving
#                                   Kusion's packages (make demo's KCL project)
#   hack/testenv.sh stop            stop everything started by "start"
#   hack/testenv.sh env             print the variables tests read (eval "$(hack/testenv.sh env)")
set -euo pipefail

K8S_VERSION=1.32.4
KWOK_VERSION=0.7.0
TOFU_VERSION=1.12.6
TF_LOCAL_VERSION=1.4.0
TF_TIME_VERSION=0.14.2
# MinIO tags no semantic versions: this is the proxy's pseudo-version of a commit.
MINIO_VERSION=0.0.0-20260212201848-7aac2a2c5b7c
FAKE_GCS_VERSION=1.56.1
AZURITE_VERSION=3.37.0
# The fake GitHub keeps a cut of these two for a plain go test: after a bump,
# go test ./internal/githubfake -run TestOfflineCut -update (with the env).
OCTOKIT_OPENAPI_VERSION=23.0.2
OCTOKIT_WEBHOOKS_EXAMPLES_VERSION=7.6.1
# CNCF Distribution, the registry Docker's and most others' are built on.
REGISTRY_VERSION=3.1.2
CACHE=${KUSIONPR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kusionpr}
BIN=$CACHE/testenv/bin
# kubectl, when PATH has none; "env" puts this folder on PATH.
TOOLS=$CACHE/testenv/tools
LOGS=$CACHE/testenv/logs
RUN=${KUSIONPR_TESTENV_DIR:-$CACHE/testenv/run}
KUBECONFIG_OUT=$RUN/kubeconfig
# Outside $RUN, which every start wipes.
MIRROR=$CACHE/testenv/terraform-mirror
TF_CLI_CONFIG=$CACHE/testenv/terraformrc
AZURITE_DIR=$CACHE/testenv/azurite
# GitHub's REST description and webhook examples, for internal/githubfake.
OCTOKIT_DIR=$CACHE/testenv/octokit
# Fixed credentials of the local test stores. Azurite's are its well-known
# development account, the only one it serves.
S3_ACCESS_KEY=kusionpr
S3_SECRET_KEY=kusionpr-secret
AZURE_ACCOUNT=devstoreaccount1
AZURE_KEY='Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=='

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PREFIX=testenv
# log, die, step (a long command with a progress line every 30 s) and
# cache_lock.
. "$(dirname "${BASH_SOURCE[0]}")/steps.sh"

need_etcd() {
  if command -v etcd >/dev/null 2>&1; then return; fi
  need_pkg etcd "the test cluster stores its state in it" etcd-server
  # The package may start a system etcd on 2379; ours runs on its own ports,
  # so that one is stopped, through its service (never by name: another etcd
  # on this machine is not ours to stop).
  (systemctl stop etcd 2>/dev/null || service etcd stop 2>/dev/null || true) >/dev/null 2>&1
}

# build_dir: a new temporary folder beside what is built ($CACHE/testenv/.build.*),
# for a build to write into before its result is renamed into place. Those
# left by a run that was stopped are removed by the next build (clean_builds),
# which holds the lock, so none is another's.
build_dir() { mkdir -p "$CACHE/testenv" && mktemp -d "$CACHE/testenv/.build.XXXXXX"; }
clean_builds() { rm -rf "$CACHE"/testenv/.build.* "$CACHE/testenv/kube-build"; }

# install_into DIR FILE...: move each built FILE into DIR (a rename, so DIR
# never holds a half-written binary).
install_into() {
  local dir=$1 f; shift
  mkdir -p "$dir"
  for f in "$@"; do mv -f "$f" "$dir/"; done
}

# build_kubernetes: the cluster's binaries, and kubectl when PATH has none, in one
# go build so they share compiled packages and link in parallel. How long it
# takes depends on the machine and its load (8 to 60 minutes have been seen):
# its progress lines count the packages compiled of those go plans to.
build_kubernetes() {
  local want=(kube-apiserver kube-controller-manager kube-scheduler) c missing=()
  for c in "${want[@]}"; do [ -x "$BIN/$c" ] || missing+=("$c"); done
  local kubectl=
  if ! type -P kubectl >/dev/null && [ ! -x "$TOOLS/kubectl" ]; then kubectl=yes; fi
  [ ${#missing[@]} -eq 0 ] && [ -z "$kubectl" ] && return
  local src=$CACHE/testenv/src/kubernetes
  if [ ! -f "$src/.prepared" ]; then
    step "download-kubernetes-v$K8S_VERSION" prepare_kubernetes "$src"
  fi
  local pkgs=() out
  for c in "${missing[@]}"; do pkgs+=("./cmd/$c"); done
  [ -n "$kubectl" ] && pkgs+=(./cmd/kubectl)
  out=$(build_dir)
  local gobuild=(env -C "$src" GOSUMDB=off GOFLAGS=-mod=mod CGO_ENABLED=0 go build -trimpath -ldflags "-s -w $(version_ldflags)" -o "$out/")
  plan "plan-kubernetes-v$K8S_VERSION" "${gobuild[@]}" -n "${pkgs[@]}"
  log "building ${pkgs[*]#./cmd/} v$K8S_VERSION: $PLAN_COMPILES packages to compile, then ${#pkgs[@]} to link"
  step "build-kubernetes-v$K8S_VERSION" "${gobuild[@]}" -v "${pkgs[@]}"
  for c in "${missing[@]}"; do install_into "$BIN" "$out/$c"; done
  [ -n "$kubectl" ] && install_into "$TOOLS" "$out/kubectl"
  rm -rf "$out"
}

# version_ldflags: what "kubectl version" and the API server's /version report;
# the release scripts set it and a plain go build does not.
version_ldflags() {
  local minor=${K8S_VERSION#1.}; minor=${minor%%.*}
  local p
  for p in k8s.io/client-go/pkg/version k8s.io/component-base/version; do
    printf -- '-X %s.gitVersion=v%s -X %s.gitMajor=1 -X %s.gitMinor=%s -X %s.gitTreeState=clean ' \
      "$p" "$K8S_VERSION" "$p" "$p" "$minor" "$p"
  done
}

# prepare_kubernetes DIR: k8s.io/kubernetes's source from the proxy, with its
# staging modules taken from the proxy at the matching version.
prepare_kubernetes() {
  local src=$1 dir
  # The checksum database does not know this module; it comes from the proxy all the same.
  dir=$(GOSUMDB=off GOFLAGS=-mod=mod go mod download -json "k8s.io/kubernetes@v$K8S_VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  [ -n "$dir" ] && [ -d "$dir" ] || { echo "could not download k8s.io/kubernetes@v$K8S_VERSION" >&2; return 1; }
  local tmp
  tmp=$(build_dir)/kubernetes
  cp -r "$dir" "$tmp"; chmod -R u+w "$tmp"
  rm -rf "$tmp/vendor" "$tmp"/go.work*
  sed -i -E \
    -e 's#(k8s\.io/[A-Za-z0-9_.-]+) => \./staging/src/k8s\.io/[A-Za-z0-9_.-]+#\1 => \1 v0.'"${K8S_VERSION#1.}"'#' \
    -e 's#(k8s\.io/[A-Za-z0-9_.-]+) v0\.0\.0$#\1 v0.'"${K8S_VERSION#1.}"'#' \
    "$tmp/go.mod"
  touch "$tmp/.prepared"
  # What is in $src was left unprepared by a stopped run (the lock is held).
  rm -rf "$src"; mkdir -p "$(dirname "$src")"
  mv "$tmp" "$src"
  rmdir "$(dirname "$tmp")"
}

# go_install NAME STEP MODULE@VERSION [GO-FLAGS...]: go install into a
# temporary folder, then into $BIN.
go_install() {
  local name=$1 stepname=$2 module=$3 tmp; shift 3
  tmp=$(build_dir)
  step "$stepname" env GOBIN="$tmp" CGO_ENABLED=0 go install -v "$@" "$module"
  install_into "$BIN" "$tmp/$name"
  rm -rf "$tmp"
}

build_kwok() {
  [ -x "$BIN/kwok" ] && return
  go_install kwok "build-kwok-v$KWOK_VERSION" "sigs.k8s.io/kwok/cmd/kwok@v$KWOK_VERSION"
}

# mod_dir MODULE@VERSION: download the module from the proxy, print its folder.
mod_dir() {
  local dir
  dir=$(go mod download -json "$1" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  if [ -z "$dir" ] || [ ! -d "$dir" ]; then die "could not download $1"; fi
  echo "$dir"
}

build_tofu() {
  [ -x "$BIN/tofu" ] && return
  # go install ...@version refuses the module (its go.mod has a replace
  # directive); building inside the downloaded module works.
  local dir
  log "downloading OpenTofu v$TOFU_VERSION's source"
  dir=$(mod_dir "github.com/opentofu/opentofu@v$TOFU_VERSION") || exit 1
  local tmp
  tmp=$(build_dir)
  step "build-opentofu-v$TOFU_VERSION" env -C "$dir" CGO_ENABLED=0 go build -v -trimpath -buildvcs=false \
    -ldflags "-s -w -X github.com/opentofu/opentofu/version.dev=no" -o "$tmp/tofu" ./cmd/tofu
  install_into "$BIN" "$tmp/tofu"
  rm -rf "$tmp"
}

# build_provider TYPE VERSION MODULE: put terraform-provider-TYPE into the mirror
# as hashicorp/TYPE, under both registry.terraform.io and registry.opentofu.org
# (tofu resolves "hashicorp/TYPE" to the latter).
build_provider() {
  local type=$1 version=$2 module=$3
  local file=terraform-provider-${type}_v$version platform tf tofu tmp
  platform=$(go env GOOS)_$(go env GOARCH)
  tf=$MIRROR/registry.terraform.io/hashicorp/$type/$version/$platform
  tofu=$MIRROR/registry.opentofu.org/hashicorp/$type/$version/$platform
  tmp=$(build_dir)
  if [ ! -x "$tf/$file" ]; then
    step "build-terraform-provider-$type-v$version" env GOBIN="$tmp" CGO_ENABLED=0 \
      go install -v -trimpath -ldflags "-s -w" "$module@v$version"
    mv "$tmp/terraform-provider-$type" "$tmp/$file"
    install_into "$tf" "$tmp/$file"
  fi
  if [ ! -x "$tofu/$file" ]; then
    cp "$tf/$file" "$tmp/$file"
    install_into "$tofu" "$tmp/$file"
  fi
  rm -rf "$tmp"
}

# OpenTofu and the two providers the tests use, offline: a filesystem mirror and a
# CLI configuration that installs hashicorp/* from it and nothing from the network.
# (dev_overrides would skip the mirror but make "init" fail offline.)
build_terraform() {
  build_tofu
  build_provider local "$TF_LOCAL_VERSION" github.com/terraform-providers/terraform-provider-local
  build_provider time "$TF_TIME_VERSION" github.com/hashicorp/terraform-provider-time
  local tmp
  tmp=$(build_dir)
  cat >"$tmp/terraformrc" <<RC
provider_installation {
  filesystem_mirror {
    path    = "$MIRROR"
    include = ["registry.terraform.io/hashicorp/*", "registry.opentofu.org/hashicorp/*"]
  }
  direct {
    exclude = ["registry.terraform.io/*/*", "registry.opentofu.org/*/*"]
  }
}
RC
  mv "$tmp/terraformrc" "$TF_CLI_CONFIG"
  rm -rf "$tmp"
}

build_minio() {
  [ -x "$BIN/minio" ] && return
  go_install minio build-minio "github.com/minio/minio@v$MINIO_VERSION" -trimpath -ldflags "-s -w"
}

build_fake_gcs() {
  [ -x "$BIN/fake-gcs-server" ] && return
  go_install fake-gcs-server "build-fake-gcs-server-v$FAKE_GCS_VERSION" \
    "github.com/fsouza/fake-gcs-server@v$FAKE_GCS_VERSION" -trimpath -ldflags "-s -w"
}

# replace_dir DIR NEW: NEW (a finished folder beside DIR) becomes DIR; the
# old one, set aside by a rename first, is removed after.
replace_dir() {
  local old=
  if [ -e "$1" ] || [ -L "$1" ]; then old=$(build_dir); mv "$1" "$old/"; fi
  mv "$2" "$1"
  [ -z "$old" ] || rm -rf "$old"
}

build_azurite() {
  [ -x "$AZURITE_DIR/node_modules/.bin/azurite-blob" ] && return
  local tmp
  tmp=$(build_dir)
  step "npm-install-azurite-$AZURITE_VERSION" env -C "$tmp" npm install --no-audit --no-fund --loglevel=error "azurite@$AZURITE_VERSION"
  replace_dir "$AZURITE_DIR" "$tmp"
}

# GitHub's published REST description (with its response examples) and webhook
# payloads: internal/githubfake checks requests against the one and answers and
# makes events from both. About 400 MB, so installed here, never committed. The
# stamp names both versions, so bumping either reinstalls.
build_octokit() {
  local stamp="openapi@$OCTOKIT_OPENAPI_VERSION webhooks-examples@$OCTOKIT_WEBHOOKS_EXAMPLES_VERSION"
  [ "$(cat "$OCTOKIT_DIR/.installed" 2>/dev/null)" = "$stamp" ] && return
  local tmp
  tmp=$(build_dir)
  step "npm-install-octokit" env -C "$tmp" npm install --no-audit --no-fund --loglevel=error \
    "@octokit/openapi@$OCTOKIT_OPENAPI_VERSION" "@octokit/webhooks-examples@$OCTOKIT_WEBHOOKS_EXAMPLES_VERSION"
  echo "$stamp" >"$tmp/.installed"
  replace_dir "$OCTOKIT_DIR" "$tmp"
}

build_registry() {
  [ -x "$BIN/registry" ] && return
  go_install registry "build-registry-v$REGISTRY_VERSION" \
    "github.com/distribution/distribution/v3/cmd/registry@v$REGISTRY_VERSION" -trimpath -ldflags "-s -w"
}

# go_stamp DIR...: what a tool built from go.sum and these folders' Go
# files was made from. The project's own programs, unlike the other
# binaries, change with the checkout: a different stamp rebuilds them.
go_stamp() {
  (cd "$ROOT" && find go.sum "$@" -type f \( -name go.sum -o -name '*.go' \) ! -name '*_test.go' |
    LC_ALL=C sort | xargs cat) | sha256sum | cut -c1-16
}

# build_go_tool NAME DIR...: $BIN/NAME from ./hack/NAME, built again when
# its own Go files or those of the folders named change.
build_go_tool() {
  local name=$1 stamp tmp
  shift
  stamp=$(go_stamp "hack/$name" "$@")
  [ -x "$BIN/$name" ] && [ "$(cat "$BIN/$name.stamp" 2>/dev/null)" = "$stamp" ] && return
  tmp=$(build_dir)
  step "build-$name" env -C "$ROOT" CGO_ENABLED=0 go build -trimpath -o "$tmp/$name" "./hack/$name"
  echo "$stamp" >"$tmp/$name.stamp"
  install_into "$BIN" "$tmp/$name" "$tmp/$name.stamp"
  rm -rf "$tmp"
}

# The KCL package sources' server and publisher.
build_kclsources() { build_go_tool kclsources engine/kcl/deps engine/kcl/kclmod; }

# The stores the backend tests use: S3, GCS and Azure Blob, and
# PostgreSQL from Debian's packages.
build_storage() {
  build_minio
  build_fake_gcs
  build_azurite
  # Debian keeps the server's programs off PATH: look where it puts them.
  postgres_bin >/dev/null 2>&1 || need_pkg pg_ctl "the PostgreSQL store's tests run against it" postgresql
  postgres_bin >/dev/null || die "PostgreSQL's server programs are not under /usr/lib/postgresql/*/bin nor on PATH"
}

# postgres_bin: the folder of PostgreSQL's server programs (Debian keeps
# them out of PATH, under /usr/lib/postgresql/VERSION/bin).
postgres_bin() {
  local d
  for d in /usr/lib/postgresql/*/bin; do [ -x "$d/postgres" ] && { echo "$d"; return; }; done
  d=$(command -v postgres) || return 1
  dirname "$d"
}

# as_server: the command prefix that runs PostgreSQL's programs as nobody
# when this script is root (they refuse to run as root); setpriv execs, so
# the pid daemon records is the server's.
as_server() {
  if [ "$(id -u)" -eq 0 ]; then echo "setpriv --reuid=nobody --regid=nogroup --clear-groups"; fi
}

# terraform_binaries: the Terraform-compatible binaries tests run, colon-separated:
# terraform from PATH if there is one, and the built tofu.
terraform_binaries() {
  local list=() p
  if p=$(command -v terraform 2>/dev/null); then
    case "$p" in /*) ;; *) p=$(cd "$(dirname "$p")" && pwd)/$(basename "$p") ;; esac
    list+=("$p")
  fi
  [ -x "$BIN/tofu" ] && list+=("$BIN/tofu")
  local IFS=:
  echo "${list[*]}"
}

print_env() {
  printf 'export %s=%q\n' \
    KUSIONPR_TEST_KUBECONFIG "$KUBECONFIG_OUT" \
    TF_CLI_CONFIG_FILE "$TF_CLI_CONFIG" \
    CHECKPOINT_DISABLE 1 \
    KUSIONPR_TEST_TERRAFORM_BINARIES "$(terraform_binaries)"
  bash "$ROOT/hack/kcl.sh" env
  # Tests and benchmarks run kubectl from PATH.
  if built_kubectl; then
    printf 'export PATH=%q:"$PATH"\n' "$TOOLS"
  fi
  if [ -f "$OCTOKIT_DIR/.installed" ]; then
    printf 'export %s=%q\n' KUSIONPR_TEST_OCTOKIT_DIR "$OCTOKIT_DIR/node_modules/@octokit"
  fi
  # The stores' ports are known only once "start" ran. The tests set AWS_*,
  # STORAGE_EMULATOR_HOST and AZURE_* themselves, per test.
  local p
  if p=$(cat "$RUN/s3.port" 2>/dev/null); then
    printf 'export %s=%q\n' \
      KUSIONPR_TEST_S3_ENDPOINT "http://127.0.0.1:$p" \
      KUSIONPR_TEST_S3_ACCESS_KEY "$S3_ACCESS_KEY" \
      KUSIONPR_TEST_S3_SECRET_KEY "$S3_SECRET_KEY"
  fi
  if p=$(cat "$RUN/gcs.port" 2>/dev/null); then
    printf 'export %s=%q\n' KUSIONPR_TEST_GCS_ENDPOINT "127.0.0.1:$p"
  fi
  if p=$(cat "$RUN/cloudfake.port" 2>/dev/null); then
    printf 'export %s=%q\n' \
      KUSIONPR_TEST_CLOUD_URL "https://127.0.0.1:$p" \
      KUSIONPR_TEST_CLOUD_CA "$RUN/cloudfake/ca.pem"
  fi
  if p=$(cat "$RUN/oci.port" 2>/dev/null); then
    printf 'export %s=%q\n' KUSIONPR_TEST_OCI_REGISTRY "127.0.0.1:$p"
  fi
  if p=$(cat "$RUN/git.port" 2>/dev/null); then
    printf 'export %s=%q\n' KUSIONPR_TEST_GIT_URL "http://127.0.0.1:$p"
  fi
  if p=$(cat "$RUN/postgres.port" 2>/dev/null); then
    printf 'export %s=%q\n' KUSIONPR_TEST_POSTGRES_URL "postgres://kusionpr@127.0.0.1:$p/postgres?sslmode=disable"
  fi
  if p=$(cat "$RUN/azure.port" 2>/dev/null); then
    printf 'export %s=%q\n' \
      KUSIONPR_TEST_AZURE_ENDPOINT "http://127.0.0.1:$p/$AZURE_ACCOUNT" \
      KUSIONPR_TEST_AZURE_ACCOUNT "$AZURE_ACCOUNT" \
      KUSIONPR_TEST_AZURE_KEY "$AZURE_KEY"
  fi
}

need_tools() {
  need_pkg openssl "it makes the cluster's service-account key" openssl
  command -v go >/dev/null 2>&1 || die "go is missing: the test binaries are built from the Go module proxy"
  need_pkg curl "it checks the object stores are up" curl
}

need_npm() {
  need_pkg npm "Azurite and GitHub's payloads come from npm" nodejs npm
}

# built_kubectl: PATH has no kubectl and the cluster's build made one.
built_kubectl() { [ -x "$TOOLS/kubectl" ] && ! type -P kubectl >/dev/null; }

# kubectl from PATH, else the one built with the cluster.
kubectl() {
  if built_kubectl; then "$TOOLS/kubectl" "$@"; else command kubectl "$@"; fi
}

# kill_tree PID: PID and every process under it (a go build's compilers).
kill_tree() {
  local c
  for c in $(pgrep -P "$1" 2>/dev/null); do kill_tree "$c"; done
  kill "$1" 2>/dev/null || true
}

build_cluster() {
  need_tools
  need_etcd
  build_kubernetes
  build_kwok
  build_cloudfake
}

# build_cloudfake: the clouds' token services and the cluster's webhook
# token authenticator (internal/cloudfake).
build_cloudfake() { build_go_tool cloudfake internal/cloudfake internal/testca; }

build_rest() {
  need_tools
  need_npm
  build_terraform
  build_storage
  build_octokit
  build_registry
  build_kclsources
}

# build: the cluster's binaries and the rest at once. Each go build already
# uses every core; running two side by side fills the gaps (module downloads,
# single-threaded links, npm).
build() {
  clean_builds
  # Package installs first: apt-get takes one lock.
  need_tools
  need_npm
  need_etcd
  local pid
  build_cluster &
  pid=$!
  trap 'kill_tree '"$pid" EXIT
  build_rest
  wait "$pid" || die "building the cluster failed (its lines are above)"
  trap - EXIT
}

free_port() {
  python3 - <<'PY' 2>/dev/null || echo $((20000 + RANDOM % 20000))
import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()
PY
}

wait_for() { # desc seconds command...
  local desc=$1 secs=$2; shift 2
  local i
  for ((i = 0; i < secs * 4; i++)); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep 0.25
  done
  die "$desc was not ready after ${secs}s (logs in $RUN/*.log)"
}

# The servers, by the names their lines in $RUN/pids carry.
CLUSTER=(cloudfake etcd kube-apiserver kube-controller-manager kube-scheduler kwok)
STORAGE=(minio fake-gcs-server azurite postgres)
KCLSOURCES=(registry kclgit)

# proc_start PID: when the process started (field 22 of /proc/PID/stat,
# clock ticks after boot); nothing when there is no such process or it has
# ended (a zombie).
proc_start() {
  # shellcheck disable=SC2046 # the fields, split on spaces
  set -- $(proc_stat "$1")
  case "${1:-Z}" in Z | X | x) return 0 ;; esac
  echo "${20}"
}

# ours PID [START]: PID is still the process that was started, with that
# start time. A line of a pids file written before start times were
# recorded has none: the process then counts as ours only when its command
# line names this environment's folders.
ours() {
  local now
  now=$(proc_start "$1")
  [ -n "$now" ] || return 1
  if [ -n "${2:-}" ]; then [ "$now" = "$2" ]; return; fi
  tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null | grep -qF -e "$RUN/" -e "$BIN/" -e "$AZURITE_DIR/"
}

# daemon NAME COMMAND...: start a server in the background with its output
# in $RUN/NAME.log, and record it in $RUN/pids as "PID START NAME". It does
# not inherit the cache's lock (file descriptor 9).
daemon() {
  local name=$1
  shift
  "$@" >"$RUN/$name.log" 2>&1 9>&- &
  echo "$! $(proc_start $!) $name" >>"$RUN/pids"
}

# named NAME WANTED...: NAME is one of WANTED, or WANTED is empty, or NAME
# is empty (a line without names matches any).
named() {
  local name=$1 w
  shift
  [ $# -eq 0 ] || [ -z "$name" ] && return 0
  for w in "$@"; do [ "$w" = "$name" ] && return 0; done
  return 1
}

# running NAME...: the recorded servers of those names are all still the
# processes started, and there is at least one.
running() {
  [ -f "$RUN/pids" ] || return 1
  local pid start name n=0
  while read -r pid start name; do
    named "$name" "$@" || continue
    ours "$pid" "$start" || return 1
    n=$((n + 1))
  done <"$RUN/pids"
  [ "$n" -gt 0 ]
}

# stop_servers [NAME...]: stop the recorded servers (all, or those named),
# each only while it is still the process started: TERM, up to 5 s to end
# (Azurite closes its port and stays), then KILL. Their lines leave
# $RUN/pids.
stop_servers() {
  [ -f "$RUN/pids" ] || return 0
  local pid start name i left=() kept=()
  while read -r pid start name; do
    if named "$name" "$@"; then
      # Last started, first stopped.
      if ours "$pid" "$start"; then left=("$pid:$start" "${left[@]}"); fi
    else
      kept+=("$pid $start $name")
    fi
  done <"$RUN/pids"
  signal_ours TERM "${left[@]}"
  for ((i = 0; i < 25 && ${#left[@]} > 0; i++)); do
    sleep 0.2
    mapfile -t left < <(still_ours "${left[@]}")
  done
  signal_ours KILL "${left[@]}"
  for ((i = 0; i < 25 && ${#left[@]} > 0; i++)); do
    sleep 0.2
    mapfile -t left < <(still_ours "${left[@]}")
  done
  if [ ${#kept[@]} -eq 0 ]; then
    rm -f "$RUN/pids"
  else
    printf '%s\n' "${kept[@]}" >"$RUN/pids.new"
    mv "$RUN/pids.new" "$RUN/pids"
  fi
}

# signal_ours SIGNAL PID:START...: send SIGNAL to each that is still ours.
signal_ours() {
  local sig=$1 p
  shift
  for p in "$@"; do
    if ours "${p%%:*}" "${p#*:}"; then kill -s "$sig" "${p%%:*}" 2>/dev/null || true; fi
  done
}

# still_ours PID:START...: those still running as started.
still_ours() {
  local p
  for p in "$@"; do
    if ours "${p%%:*}" "${p#*:}"; then echo "$p"; fi
  done
}

storage_ready() {
  [ -f "$RUN/s3.port" ] && [ -f "$RUN/gcs.port" ] && [ -f "$RUN/azure.port" ] && [ -f "$RUN/postgres.port" ] || return 1
  "$(postgres_bin)/pg_isready" -q -h 127.0.0.1 -p "$(cat "$RUN/postgres.port")" || return 1
  curl -sf "http://127.0.0.1:$(cat "$RUN/s3.port")/minio/health/live" >/dev/null 2>&1 &&
    curl -sf "http://127.0.0.1:$(cat "$RUN/gcs.port")/storage/v1/b" >/dev/null 2>&1 &&
    curl -s -o /dev/null "http://127.0.0.1:$(cat "$RUN/azure.port")/$AZURE_ACCOUNT?comp=list" 2>/dev/null
}

# start_storage: start MinIO, fake-gcs-server and Azurite with empty stores
# (stopping those recorded before, which did not answer), add them to
# $RUN/pids and write their ports to $RUN/{s3,gcs,azure}.port for "env".
# No buckets: the tests make their own.
start_storage() {
  local p_s3 p_s3console p_gcs p_azure p_pg
  stop_servers "${STORAGE[@]}"
  rm -f "$RUN/s3.port" "$RUN/gcs.port" "$RUN/azure.port" "$RUN/postgres.port"
  p_s3=$(free_port); p_s3console=$(free_port); p_gcs=$(free_port); p_azure=$(free_port); p_pg=$(free_port)
  rm -rf "$RUN/minio" "$RUN/azurite"; mkdir -p "$RUN/minio" "$RUN/azurite"
  # PostgreSQL: one cluster, trusting local connections; each test makes
  # its own database. fsync off: the tests' data need not survive a crash
  # of the machine, only of the bot. Its folder is under the temporary
  # folder, which nobody (the server's user when this script is root) may
  # reach, where the cache under root's home is not.
  local pg pgdir
  pg=$(postgres_bin)
  [ -f "$RUN/postgres.dir" ] && rm -rf "$(cat "$RUN/postgres.dir")"
  pgdir=$(mktemp -d "${TMPDIR:-/tmp}/kusionpr-postgres.XXXXXX")
  echo "$pgdir" >"$RUN/postgres.dir"
  [ "$(id -u)" -ne 0 ] || chown nobody:nogroup "$pgdir"
  # shellcheck disable=SC2046 # the prefix's words
  $(as_server) "$pg/initdb" -D "$pgdir/data" -U kusionpr --auth=trust -E UTF8 >"$RUN/postgres-initdb.log" 2>&1 ||
    die "initdb failed ($RUN/postgres-initdb.log)"
  # shellcheck disable=SC2046
  daemon postgres $(as_server) "$pg/postgres" -D "$pgdir/data" -h 127.0.0.1 -p "$p_pg" -k "$pgdir" -c fsync=off -c max_connections=400

  daemon minio env MINIO_BROWSER=off MINIO_UPDATE=off MINIO_ROOT_USER=$S3_ACCESS_KEY MINIO_ROOT_PASSWORD=$S3_SECRET_KEY \
    "$BIN/minio" server --quiet --address "127.0.0.1:$p_s3" --console-address "127.0.0.1:$p_s3console" "$RUN/minio"
  daemon fake-gcs-server "$BIN/fake-gcs-server" -scheme http -host 127.0.0.1 -port "$p_gcs" -backend memory \
    -external-url "http://127.0.0.1:$p_gcs" -public-host "127.0.0.1:$p_gcs"
  daemon azurite "$AZURITE_DIR/node_modules/.bin/azurite-blob" --blobHost 127.0.0.1 --blobPort "$p_azure" \
    --location "$RUN/azurite" --skipApiVersionCheck --loose

  wait_for minio 60 curl -sf "http://127.0.0.1:$p_s3/minio/health/live"
  wait_for fake-gcs-server 30 curl -sf "http://127.0.0.1:$p_gcs/storage/v1/b"
  wait_for azurite 30 curl -s -o /dev/null "http://127.0.0.1:$p_azure/$AZURE_ACCOUNT?comp=list"
  wait_for postgres 30 "$pg/pg_isready" -q -h 127.0.0.1 -p "$p_pg"
  echo "$p_s3" >"$RUN/s3.port"
  echo "$p_gcs" >"$RUN/gcs.port"
  echo "$p_azure" >"$RUN/azure.port"
  echo "$p_pg" >"$RUN/postgres.port"
  log "stores ready: S3 127.0.0.1:$p_s3, GCS 127.0.0.1:$p_gcs, Azure Blob 127.0.0.1:$p_azure, PostgreSQL 127.0.0.1:$p_pg"
}

kclsources_ready() {
  [ -f "$RUN/oci.port" ] && [ -f "$RUN/git.port" ] || return 1
  curl -sf "http://127.0.0.1:$(cat "$RUN/oci.port")/v2/" >/dev/null 2>&1 &&
    curl -sf "http://127.0.0.1:$(cat "$RUN/git.port")/KusionStack/kam.git/info/refs?service=git-upload-pack" >/dev/null 2>&1
}

# kclpkgs_sum: what the served packages were made from.
kclpkgs_sum() { (cd "$ROOT/internal/testenv/kclpkgs" && find . -type f -print0 | sort -z | xargs -0 sha256sum | sha256sum | cut -c1-16); }

# start_kclsources: the registry and the git server, with empty stores
# (stopping those recorded before, which did not answer); then this
# checkout's packages are pushed and made into repositories. Ports go to
# $RUN/{oci,git}.port for "env".
start_kclsources() {
  local p_reg p_git
  stop_servers "${KCLSOURCES[@]}"
  rm -f "$RUN/oci.port" "$RUN/git.port"
  rm -rf "$RUN/registry" "$RUN/git"; mkdir -p "$RUN/registry" "$RUN/git"
  p_reg=$(free_port); p_git=$(free_port)
  cat >"$RUN/registry.yml" <<YML
version: 0.1
log:
  level: info
storage:
  filesystem:
    rootdirectory: $RUN/registry
http:
  addr: 127.0.0.1:$p_reg
  secret: kusionpr-testenv
YML
  daemon registry env OTEL_TRACES_EXPORTER=none "$BIN/registry" serve "$RUN/registry.yml"
  daemon kclgit "$BIN/kclsources" serve-git -addr "127.0.0.1:$p_git" -root "$RUN/git"
  wait_for registry 30 curl -sf "http://127.0.0.1:$p_reg/v2/"
  wait_for "git server" 30 curl -s -o /dev/null "http://127.0.0.1:$p_git/"
  "$BIN/kclsources" publish -registry "127.0.0.1:$p_reg" -git-root "$RUN/git" -packages "$ROOT/internal/testenv/kclpkgs" \
    >"$RUN/kclsources-publish.log" 2>&1 || die "publishing the KCL packages failed ($RUN/kclsources-publish.log)"
  echo "$p_reg" >"$RUN/oci.port"
  echo "$p_git" >"$RUN/git.port"
  kclpkgs_sum >"$RUN/kclpkgs.sum"
  log "KCL package sources ready: OCI registry 127.0.0.1:$p_reg, git http://127.0.0.1:$p_git"
}

node_ready() {
  [ "$(kubectl --kubeconfig "$1" get node kwok-node-0 -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')" = True ]
}

# An environment started before the cloud stand-in existed has none: it
# is started again, as the tests need it.
cluster_running() { running "${CLUSTER[@]}" && running cloudfake && kubectl --kubeconfig "$KUBECONFIG_OUT" get --raw /readyz >/dev/null 2>&1; }

# launcher: what starts the environment, as this script does it (how it
# starts each server, the versions): an environment started by another
# launcher is told apart when reused.
launcher() {
  { declare -f daemon launch_cluster start_storage start_kclsources; echo "$K8S_VERSION $KWOK_VERSION $MINIO_VERSION $FAKE_GCS_VERSION $AZURITE_VERSION $REGISTRY_VERSION"; } |
    sha256sum | cut -c1-16
}

# reused: say the environment running is kept, who started it and, when
# another checkout's script starts it otherwise, how to have this one's.
reused() {
  local key='' root='' at=''
  { read -r key root at <"$RUN/started-by"; } 2>/dev/null || true
  log "already running ($KUBECONFIG_OUT${root:+, started from $root at $at})"
  [ "$key" = "$(launcher)" ] && return
  if [ -z "$key" ]; then
    log "note: an earlier hack/testenv.sh started it, and it may start it otherwise than this checkout's ($ROOT)"
  else
    log "note: the hack/testenv.sh of $root starts it otherwise than this checkout's ($ROOT)"
  fi
  log "it is kept, as tests may be using it; 'hack/testenv.sh stop', then 'start', starts it as this checkout does"
}

# start: the cluster, OpenTofu with its providers, the object stores and
# GitHub's payloads; what is already running from this cache is kept,
# whichever checkout started it.
start() {
  # The KCL runtime engine/kcl's tests compile with (hack/kcl.sh).
  bash "$ROOT/hack/kcl.sh" install
  if cluster_running; then
    # The cluster may have been started alone (make demo); cached, this takes no time.
    build_rest
    # This checkout's stand-in, which the scripts' tests start from the
    # cache (the running one keeps serving until the next launch).
    build_cloudfake
    if ! storage_ready; then start_storage; fi
    # Packages edited since they were served are served again.
    if ! kclsources_ready || [ "$(kclpkgs_sum)" != "$(cat "$RUN/kclpkgs.sum" 2>/dev/null)" ]; then start_kclsources; fi
    reused; return
  fi
  build
  launch_cluster
  start_storage
  start_kclsources
  log "ready: KUBECONFIG=$KUBECONFIG_OUT"
}

# start_kcl: what a KCL stack needs besides the cluster (make demo): KCL's
# runtime, and the registry and git server serving Kusion's packages.
start_kcl() {
  bash "$ROOT/hack/kcl.sh" install
  mkdir -p "$RUN"
  build_registry
  build_kclsources
  if ! kclsources_ready || [ "$(kclpkgs_sum)" != "$(cat "$RUN/kclpkgs.sum" 2>/dev/null)" ]; then start_kclsources; fi
}

# start_cluster: the cluster alone, building only what it needs.
start_cluster() {
  if cluster_running; then reused; return; fi
  clean_builds
  build_cluster
  launch_cluster
  log "ready: KUBECONFIG=$KUBECONFIG_OUT"
}

# launch_cluster: etcd, kube-apiserver, kube-controller-manager, kube-scheduler
# and kwok with one node, from the built binaries, in a fresh $RUN.
launch_cluster() {
  stop
  rm -rf "$RUN"; mkdir -p "$RUN/certs"
  local p_etcd p_peer p_api p_kcm p_sched p_kwok p_cloud
  p_etcd=$(free_port); p_peer=$(free_port); p_api=$(free_port); p_kcm=$(free_port); p_sched=$(free_port); p_kwok=$(free_port)
  p_cloud=$(free_port)
  openssl genrsa -out "$RUN/sa.key" 2048 2>/dev/null
  echo "admintoken,admin,admin,system:masters" >"$RUN/tokens.csv"
  : >"$RUN/pids"
  echo "$(launcher) $ROOT $(date '+%Y-%m-%dT%H:%M:%S')" >"$RUN/started-by"

  # The clouds' token services, and the webhook through which the API
  # server accepts EKS, GKE and AKS tokens as those clusters do.
  mkdir -p "$RUN/cloudfake"
  daemon cloudfake "$BIN/cloudfake" -addr "127.0.0.1:$p_cloud" -dir "$RUN/cloudfake"
  wait_for cloudfake 30 curl -sf --cacert "$RUN/cloudfake/ca.pem" "https://127.0.0.1:$p_cloud/healthz"
  echo "$p_cloud" >"$RUN/cloudfake.port"
  cat >"$RUN/cloudfake/webhook.kubeconfig" <<KC
apiVersion: v1
kind: Config
clusters:
- name: clouds
  cluster:
    server: https://127.0.0.1:$p_cloud/authenticate
    certificate-authority: $RUN/cloudfake/ca.pem
users:
- name: kube-apiserver
  user: {}
contexts:
- name: webhook
  context: {cluster: clouds, user: kube-apiserver}
current-context: webhook
KC

  daemon etcd etcd --name testenv --data-dir "$RUN/etcd" --listen-client-urls "http://127.0.0.1:$p_etcd" \
    --advertise-client-urls "http://127.0.0.1:$p_etcd" --listen-peer-urls "http://127.0.0.1:$p_peer" \
    --initial-advertise-peer-urls "http://127.0.0.1:$p_peer" --initial-cluster "testenv=http://127.0.0.1:$p_peer"

  # The Service range holds 65,534 addresses, as a real cluster's does: the
  # benchmarks create hundreds of Services at once. It stays clear of kwok's
  # pod range (10.0.0.0/24).
  # WatchList=false: with it on, a 1.32 API server turns every watch from
  # resourceVersion ""/"0" into a watch-list, which needs etcd's progress
  # requests (etcd >= 3.4.31); Debian's 3.4.23 refuses, so such watches (kwok's
  # pod watch among them) fail and events arrive only at the next relist, about
  # a minute late: pods took ~60 s to be deleted, Deployments ~20 s to be Available.
  daemon kube-apiserver "$BIN/kube-apiserver" --etcd-servers="http://127.0.0.1:$p_etcd" --bind-address=127.0.0.1 \
    --advertise-address=127.0.0.1 --secure-port="$p_api" --cert-dir="$RUN/certs" \
    --service-account-issuer="https://127.0.0.1:$p_api" --service-account-key-file="$RUN/sa.key" \
    --service-account-signing-key-file="$RUN/sa.key" --service-cluster-ip-range=10.96.0.0/16 \
    --authorization-mode=RBAC --token-auth-file="$RUN/tokens.csv" --allow-privileged=true \
    --authentication-token-webhook-config-file="$RUN/cloudfake/webhook.kubeconfig" --authentication-token-webhook-version=v1 \
    --endpoint-reconciler-type=none \
    --feature-gates=WatchList=false

  cat >"$KUBECONFIG_OUT" <<KC
apiVersion: v1
kind: Config
clusters:
- name: testenv
  cluster:
    server: https://127.0.0.1:$p_api
    insecure-skip-tls-verify: true
users:
- name: admin
  user:
    token: admintoken
contexts:
- name: testenv
  context:
    cluster: testenv
    user: admin
current-context: testenv
KC
  local K=$KUBECONFIG_OUT
  wait_for kube-apiserver 90 kubectl --kubeconfig "$K" get --raw /readyz

  daemon kube-controller-manager "$BIN/kube-controller-manager" --kubeconfig="$K" --authentication-kubeconfig="$K" \
    --authorization-kubeconfig="$K" --leader-elect=false --bind-address=127.0.0.1 \
    --secure-port="$p_kcm" --service-account-private-key-file="$RUN/sa.key" \
    --use-service-account-credentials=false \
    --controllers='*,-nodeipam,-nodelifecycle'
  daemon kube-scheduler "$BIN/kube-scheduler" --kubeconfig="$K" --authentication-kubeconfig="$K" \
    --authorization-kubeconfig="$K" --leader-elect=false --bind-address=127.0.0.1 \
    --secure-port="$p_sched"
  daemon kwok "$BIN/kwok" --kubeconfig="$K" --manage-all-nodes=false \
    --manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake \
    --cidr=10.0.0.1/24 --node-ip=10.0.0.1 --server-address="127.0.0.1:$p_kwok"

  kubectl --kubeconfig "$K" apply -f - >/dev/null <<'NODE'
apiVersion: v1
kind: Node
metadata:
  name: kwok-node-0
  annotations:
    kwok.x-k8s.io/node: fake
    node.alpha.kubernetes.io/ttl: "0"
  labels:
    kubernetes.io/hostname: kwok-node-0
    kubernetes.io/os: linux
    kubernetes.io/arch: amd64
    type: kwok
spec: {}
status:
  allocatable: {cpu: "32", memory: 256Gi, pods: "1000"}
  capacity: {cpu: "32", memory: 256Gi, pods: "1000"}
NODE
  # The node lifecycle controller that would lift this taint is off.
  wait_for "node taint" 30 kubectl --kubeconfig "$K" get node kwok-node-0 -o name
  kubectl --kubeconfig "$K" taint node kwok-node-0 node.kubernetes.io/not-ready:NoSchedule- >/dev/null 2>&1 || true
  wait_for "kwok node Ready" 60 node_ready "$K"
  kubectl --kubeconfig "$K" taint node kwok-node-0 node.kubernetes.io/not-ready:NoSchedule- >/dev/null 2>&1 || true
  # The default ServiceAccount is created by a controller; pods need it.
  wait_for "default service account" 60 kubectl --kubeconfig "$K" get serviceaccount default -n default
}

# stop: every server "start" recorded, by its pid, while it is still the
# process started.
stop() {
  stop_servers
  rm -f "$RUN/s3.port" "$RUN/gcs.port" "$RUN/azure.port" "$RUN/postgres.port" "$RUN/oci.port" "$RUN/git.port"
  # PostgreSQL's data, under the temporary folder (see start_storage).
  if [ -f "$RUN/postgres.dir" ]; then rm -rf "$(cat "$RUN/postgres.dir")"; rm -f "$RUN/postgres.dir"; fi
}

case "${1:-}" in
  build) cache_lock "hack/testenv.sh build"; build ;;
  start) cache_lock "hack/testenv.sh start"; start ;;
  start-cluster) cache_lock "hack/testenv.sh start-cluster"; start_cluster ;;
  start-kcl) cache_lock "hack/testenv.sh start-kcl"; start_kcl ;;
  stop) cache_lock "hack/testenv.sh stop"; stop ;;
  env) print_env ;;
  *) echo "usage: $0 build|start|start-cluster|start-kcl|stop|env" >&2; exit 2 ;;
esac
