#!/usr/bin/env bash
# The KCL runtime engine/kcl compiles main.k with: the PyPI package kcl-lib
# (KCL's native runtime inside a CPython extension) and protobuf, at the
# versions and wheel hashes of hack/kcl/requirements.txt, in a virtual
# environment of their own under $CACHE/kcl/<key>. The key is a hash of the
# requirements and of the Python that runs them (its version, executable and
# machine), so a change of either gives a new folder and an old one is never
# half-changed. pip installs only those wheels (--require-hashes, --no-deps,
# --only-binary=:all:): nothing is built and nothing else is fetched. An
# installed runtime is kept (the command then takes no time); a new one is
# made in a temporary folder beside it and renamed into place when whole.
# "install" holds the cache's lock (hack/steps.sh) while it works.
#
# The runtime is a folder whose bin/python3 imports kcl_lib; engine/kcl
# takes it as the setting KUSIONPR_KCL_RUNTIME.
#
#   hack/kcl.sh install   install the runtime, or keep the one installed
#   hack/kcl.sh env       print export KUSIONPR_KCL_RUNTIME=<folder> when installed
#                         (eval "$(hack/kcl.sh env)")
#   hack/kcl.sh into DIR ARCH
#                         the image's runtime: an environment at DIR for the
#                         image's Python 3.11 with the wheels of ARCH (amd64
#                         or arm64), which need not be this machine's (the
#                         Dockerfile's build stage runs on the builder's)
#
# KUSIONPR_PYTHON names the Python to build the environment from (python3);
# the pinned wheels are for CPython 3.11.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CACHE=${KUSIONPR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kusionpr}
DIR=$CACHE/kcl
LOGS=$DIR/logs
REQUIREMENTS=$ROOT/hack/kcl/requirements.txt
PYTHON=${KUSIONPR_PYTHON:-python3}
# The CPython the wheels of requirements.txt are built for.
PYTHON_WANTED=3.11

PREFIX=kcl
# log, die, step (a long command with a progress line every 30 s) and
# cache_lock.
. "$ROOT/hack/steps.sh"

# python_id: what of the Python the environment is made from decides
# whether the installed one still fits: its version, where its executable
# really is (a venv links to it) and the machine.
python_id() {
  "$PYTHON" -c 'import os, platform, sys; print(sys.version, os.path.realpath(sys.executable), platform.machine())'
}

# key: the runtime's folder name.
key() {
  { cat "$REQUIREMENTS"; python_id; } | sha256sum | cut -c1-16
}

runtime_dir() { echo "$DIR/$(key)"; }

installed() { [ -f "$1/.installed" ] && [ -x "$1/bin/python3" ]; }

install() {
  command -v "$PYTHON" >/dev/null 2>&1 || die "$PYTHON is missing: the KCL runtime is a Python $PYTHON_WANTED package (set KUSIONPR_PYTHON to another Python)"
  local version
  version=$("$PYTHON" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
  [ "$version" = "$PYTHON_WANTED" ] ||
    die "$PYTHON is Python $version: the wheels pinned in $REQUIREMENTS are for CPython $PYTHON_WANTED (set KUSIONPR_PYTHON to a python$PYTHON_WANTED)"
  local dir
  dir=$(runtime_dir)
  if installed "$dir"; then
    log "kept $dir"
    return
  fi
  "$PYTHON" -m pip --version >/dev/null 2>&1 || die "$PYTHON has no pip (apt-get install python3-pip): it installs the KCL runtime"
  cache_lock "hack/kcl.sh install"
  # Another install may have finished while this one waited for the lock.
  if installed "$dir"; then
    log "kept $dir"
    return
  fi
  # Folders left by an install that was stopped: the lock is held, so none
  # is another's.
  rm -rf "$DIR"/.build.*
  mkdir -p "$DIR"
  local tmp t0=$SECONDS
  tmp=$(mktemp -d "$DIR/.build.XXXXXX")
  # No pip inside: the runtime holds what it runs and nothing that installs.
  step kcl-venv "$PYTHON" -m venv --without-pip "$tmp/venv"
  step kcl-pip-install "$PYTHON" -m pip --python "$tmp/venv/bin/python3" install --disable-pip-version-check \
    --require-hashes --no-deps --only-binary=:all: -r "$REQUIREMENTS"
  # The activation scripts name the temporary folder, and nothing activates
  # this environment: engine/kcl runs its bin/python3, which finds its
  # packages wherever the folder is.
  rm -f "$tmp"/venv/bin/activate*
  "$tmp/venv/bin/python3" -I -c 'import kcl_lib.api; kcl_lib.api.API()' ||
    die "the installed KCL runtime does not load (in $tmp/venv)"
  {
    echo "requirements $(sha256sum "$REQUIREMENTS" | cut -c1-64)"
    echo "python $(python_id)"
    echo "installed $(date '+%Y-%m-%dT%H:%M:%S')"
  } >"$tmp/venv/.installed"
  rm -rf "$dir"
  mv "$tmp/venv" "$dir"
  rm -rf "$tmp"
  log "installed $dir in $(since "$t0")"
}

# into: the runtime the image carries. The environment is made by this
# Python (the build stage's /usr/bin/python3, the image's too); the wheels
# are those of the image's architecture, unpacked by pip for that platform
# without running anything of theirs, so an arm64 image is made on amd64.
into() {
  local dest=$1 arch=$2 plat
  case "$arch" in
    amd64|x86_64) plat=manylinux2014_x86_64 ;;
    arm64|aarch64) plat=manylinux2014_aarch64 ;;
    *) die "no KCL runtime for the architecture $arch (amd64 and arm64 are pinned in $REQUIREMENTS)" ;;
  esac
  "$PYTHON" -m venv --without-pip "$dest"
  "$PYTHON" -m pip install --disable-pip-version-check --no-cache-dir --require-hashes --no-deps --only-binary=:all: \
    --platform "$plat" --python-version "$PYTHON_WANTED" --implementation cp \
    --target "$dest/lib/python$PYTHON_WANTED/site-packages" -r "$REQUIREMENTS"
  rm -f "$dest"/bin/activate*
}

print_env() {
  local dir
  dir=$(runtime_dir 2>/dev/null) || return 0
  if installed "$dir"; then
    printf 'export %s=%q\n' KUSIONPR_KCL_RUNTIME "$dir"
  fi
}

case "${1:-}" in
  install) install ;;
  env) print_env ;;
  into) [ $# -eq 3 ] || die "usage: $0 into DIR ARCH"; into "$2" "$3" ;;
  *) echo "usage: $0 install|env|into DIR ARCH" >&2; exit 2 ;;
esac
