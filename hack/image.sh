#!/usr/bin/env bash
# The action's image, built from the committed Dockerfile with no registry and
# no Docker engine: buildah (from Debian's packages) builds it in a chroot
# with its own storage under $CACHE/image. The two base images the Dockerfile
# names cannot be pulled, so local stand-ins are made once and tagged with
# those names:
#   golang:1.26-bookworm             a Debian bookworm root filesystem from
#                                    debootstrap plus this machine's Go (/usr/local/go)
#   gcr.io/distroless/static-debian12  CA certificates, /etc/passwd and
#                                    /etc/group (root, nonroot 65532, nobody),
#                                    time zones and a /tmp of mode 1777, on scratch
#   gcr.io/distroless/python3-debian12 the static base plus Debian's Python 3.11
#                                    and the libraries it loads (the files of
#                                    its packages, as distroless takes them):
#                                    KCL's runtime runs on it
# releases.hashicorp.com is not reachable either: the build is given the test
# environment's OpenTofu binary as TERRAFORM_FILE, checked against its own
# SHA-256 by the same hack/install-terraform.sh that downloads and checks
# HashiCorp's zip on GitHub. Go modules come from the Go proxy.
# A build whose inputs (the files of the context, the bases, the Terraform
# binary) have not changed since the last one is skipped. "build" holds the
# cache's lock (hack/steps.sh) while it works, so two builds into $CACHE/image
# wait for each other.
#
#   hack/image.sh build   make the bases if missing, then build the image
#   hack/image.sh env     print the variables the image test reads
#                         (eval "$(hack/image.sh env)")
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CACHE=${KUSIONPR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kusionpr}
DIR=$CACHE/image
# buildah's images and containers, apart from any other use of buildah or
# podman on the machine, one folder per storage driver: overlay where the
# kernel mounts it (layers cost nothing), else vfs (each layer a full copy).
DRIVER=$(cat "$DIR/driver" 2>/dev/null || true)
STORE=$DIR/storage-${DRIVER:-unknown}
LOGS=$DIR/logs
IMAGE=localhost/kusionpr:dev
GO_BASE=docker.io/library/golang:1.26-bookworm
STATIC_BASE=gcr.io/distroless/static-debian12:latest
PYTHON_BASE=gcr.io/distroless/python3-debian12:latest
# The packages of Python 3.11 whose files the Python base holds: the
# interpreter and its standard library and what they load, without the
# package manager, perl, tar and documentation that apt's closure of them
# also names (distroless leaves those out too).
PYTHON_PACKAGES="python3.11-minimal libpython3.11-minimal libpython3.11-stdlib media-types
  libbz2-1.0 libc6 libcom-err2 libcrypt1 libdb5.3 libexpat1 libffi8 libgcc-s1 libgdbm-compat4 libgdbm6
  libgssapi-krb5-2 libk5crypto3 libkeyutils1 libkrb5-3 libkrb5support0 liblzma5 libncursesw6 libnsl2
  libreadline8 libsqlite3-0 libssl3 libtinfo6 libtirpc-common libtirpc3 libuuid1 zlib1g"
DEBIAN_MIRROR=${KUSIONPR_DEBIAN_MIRROR:-http://deb.debian.org/debian}
ROOTFS=$DIR/bookworm-rootfs
# Where the Terraform binary is put in the build context for TERRAFORM_FILE
# (git ignores it; it is not in .dockerignore, which would hide it from the build).
FEED=.image/terraform

PREFIX=image
# log, die, step (a long command with a progress line every 30 s) and
# cache_lock.
. "$ROOT/hack/steps.sh"

bh() { TMPDIR=$DIR/tmp buildah --root "$STORE/root" --runroot "$STORE/run" --storage-driver "$DRIVER" "$@"; }

# pick_driver: overlay if an image layer can be mounted with it here, else vfs.
pick_driver() {
  [ -n "$DRIVER" ] && return
  local probe=$DIR/driver-probe ctr
  rm -rf "$probe"
  if ctr=$(buildah --root "$probe/root" --runroot "$probe/run" --storage-driver overlay from --pull=never scratch 2>/dev/null) &&
    buildah --root "$probe/root" --runroot "$probe/run" --storage-driver overlay mount "$ctr" >/dev/null 2>&1; then
    DRIVER=overlay
  else
    DRIVER=vfs
  fi
  buildah --root "$probe/root" --runroot "$probe/run" --storage-driver overlay rm --all >/dev/null 2>&1 || true
  umount "$probe/root/overlay" 2>/dev/null || true
  rm -rf "$probe"
  echo "$DRIVER" >"$DIR/driver"
  STORE=$DIR/storage-$DRIVER
  log "storage driver: $DRIVER"
}

have_image() { bh inspect --type image "$1" >/dev/null 2>&1; }
image_id() { bh inspect --type image --format '{{.FromImageID}}' "$1" 2>/dev/null; }

# make_rootfs: Debian bookworm, minbase with what the golang image's build
# stage uses (CA certificates to reach the Go proxy, curl for Terraform's
# download), cached. Made in a folder beside it and renamed into place when
# whole.
make_rootfs() {
  [ -f "$ROOTFS/.done" ] && return
  need_pkg debootstrap "it makes the Go base image's root filesystem" debootstrap
  local tmp
  tmp=$(mktemp -d "$DIR/.rootfs.XXXXXX")
  # The root folder of the image: mktemp makes it private.
  chmod 0755 "$tmp"
  step debootstrap-bookworm debootstrap --variant=minbase --include=ca-certificates,curl,netbase \
    bookworm "$tmp" "$DEBIAN_MIRROR"
  # As in Debian's own images: no package lists or downloaded packages, an
  # empty /dev (the runtime mounts its own).
  rm -rf "$tmp"/var/lib/apt/lists/* "$tmp"/var/cache/apt/archives/*.deb "$tmp"/dev/*
  touch "$tmp/.done"
  # One left unfinished by a stopped run (the lock is held: none is another's).
  rm -rf --one-file-system "$ROOTFS"
  mv "$tmp" "$ROOTFS"
}

# make_go_base: the stand-in for golang:1.26-bookworm, remade when this
# machine's Go changes.
make_go_base() {
  local want ctr mnt
  want="$(go version) $(stat -c %Y "$ROOTFS/.done") $(cat /usr/local/share/ca-certificates/*.crt 2>/dev/null | sha256sum | cut -c1-16)"
  if have_image "$GO_BASE" && [ "$(cat "$DIR/golang-base.stamp" 2>/dev/null)" = "$want|$(image_id "$GO_BASE")" ]; then return; fi
  local goroot
  goroot=$(go env GOROOT)
  log "making $GO_BASE from the bookworm root filesystem and $goroot ($(go env GOVERSION))"
  ctr=$(bh from --pull=never scratch)
  mnt=$(bh mount "$ctr")
  cp -a "$ROOTFS"/. "$mnt"/
  rm -f "$mnt/.done"
  mkdir -p "$mnt/usr/local" "$mnt/go/src" "$mnt/go/bin"
  cp -a "$goroot" "$mnt/usr/local/go"
  chmod -R 1777 "$mnt/go"
  # The certificate authorities this machine adds to Debian's (a TLS-inspecting
  # proxy's, say): the build reaches the Go proxy as this machine does. The
  # static base, and so the image, gets Debian's bundle alone.
  if compgen -G "/usr/local/share/ca-certificates/*.crt" >/dev/null; then
    cp /usr/local/share/ca-certificates/*.crt "$mnt/usr/local/share/ca-certificates/"
    chroot "$mnt" update-ca-certificates >/dev/null 2>&1 || die "update-ca-certificates in $GO_BASE failed"
  fi
  bh umount "$ctr" >/dev/null
  # The settings of the official image.
  bh config --env PATH=/go/bin:/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    --env GOLANG_VERSION="$(go env GOVERSION | sed 's/^go//')" --env GOTOOLCHAIN=local --env GOPATH=/go \
    --workingdir /go --cmd bash "$ctr"
  bh commit --rm -q "$ctr" "$GO_BASE" >/dev/null
  echo "$want|$(image_id "$GO_BASE")" >"$DIR/golang-base.stamp"
}

# make_static_base: the stand-in for gcr.io/distroless/static-debian12 (the
# root variant): what a static binary needs, files only, as root.
make_static_base() {
  have_image "$STATIC_BASE" && return
  log "making $STATIC_BASE"
  local ctr mnt
  ctr=$(bh from --pull=never scratch)
  mnt=$(bh mount "$ctr")
  mkdir -p "$mnt"/etc/ssl/certs "$mnt"/usr/share "$mnt"/tmp "$mnt"/root "$mnt"/home/nonroot
  cp "$ROOTFS"/etc/ssl/certs/ca-certificates.crt "$mnt"/etc/ssl/certs/
  cp -a "$ROOTFS"/usr/share/zoneinfo "$mnt"/usr/share/
  cp "$ROOTFS"/etc/services "$ROOTFS"/etc/os-release "$mnt"/etc/ 2>/dev/null || true
  cat >"$mnt/etc/passwd" <<'EOF'
root:x:0:0:root:/root:/sbin/nologin
nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin
nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin
EOF
  cat >"$mnt/etc/group" <<'EOF'
root:x:0:
nobody:x:65534:
tty:x:5:
staff:x:50:
nonroot:x:65532:
EOF
  echo 'hosts: files dns' >"$mnt/etc/nsswitch.conf"
  chmod 1777 "$mnt/tmp"
  chmod 0700 "$mnt/root"
  chown 65532:65532 "$mnt/home/nonroot"
  chmod 0700 "$mnt/home/nonroot"
  bh umount "$ctr" >/dev/null
  bh config --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    --env SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt --workingdir / "$ctr"
  bh commit --rm -q "$ctr" "$STATIC_BASE" >/dev/null
}

# make_python_base: the stand-in for gcr.io/distroless/python3-debian12:
# the static base plus the files of PYTHON_PACKAGES, installed by apt in a
# container of the Go base (the bookworm root filesystem) and copied out,
# documentation left behind. Remade when the static or Go base changes.
make_python_base() {
  local want ctr mnt out omnt pkg
  want="$(image_id "$STATIC_BASE") $(image_id "$GO_BASE") $(echo "$PYTHON_PACKAGES" | sha256sum | cut -c1-16)"
  if have_image "$PYTHON_BASE" && [ "$(cat "$DIR/python-base.stamp" 2>/dev/null)" = "$want|$(image_id "$PYTHON_BASE")" ]; then return; fi
  log "making $PYTHON_BASE from Debian's Python 3.11 packages"
  ctr=$(bh from --pull=never "$GO_BASE")
  # shellcheck disable=SC2086 # the package list is words
  step python-packages bh run --isolation chroot "$ctr" -- sh -c \
    "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $(echo $PYTHON_PACKAGES) >/dev/null"
  mnt=$(bh mount "$ctr")
  out=$(bh from --pull=never "$STATIC_BASE")
  omnt=$(bh mount "$out")
  # bookworm's merged /usr: /lib64, /lib, /bin are links into /usr, and the
  # packages list their files under both names.
  for d in bin sbin lib lib64; do
    if [ -L "$mnt/$d" ]; then
      mkdir -p "$omnt/$(readlink "$mnt/$d")"
      ln -sfn "$(readlink "$mnt/$d")" "$omnt/$d"
    fi
  done
  for pkg in $PYTHON_PACKAGES; do
    chroot "$mnt" dpkg-query -L "$pkg" >"$DIR/tmp/files" || die "$pkg is not installed in the Python base's build container"
    (cd "$mnt" && grep -v -e '^/usr/share/doc' -e '^/usr/share/man' -e '^/usr/share/lintian' -e '^/\.$' "$DIR/tmp/files" |
      while read -r f; do [ -d ".$f" ] && [ ! -L ".$f" ] || printf '.%s\0' "$f"; done |
      tar --null --no-recursion -T - -cf -) | tar -C "$omnt" -xf -
  done
  rm -f "$DIR/tmp/files"
  ln -sf python3.11 "$omnt/usr/bin/python3"
  bh umount "$ctr" >/dev/null
  bh rm "$ctr" >/dev/null
  bh umount "$out" >/dev/null
  # As distroless's own: the interpreter is the entrypoint.
  bh config --entrypoint '["/usr/bin/python3.11"]' "$out"
  bh commit --rm -q "$out" "$PYTHON_BASE" >/dev/null
  echo "$want|$(image_id "$PYTHON_BASE")" >"$DIR/python-base.stamp"
}

# terraform_feed: the binary handed to the build, put into the context.
# Prints its SHA-256.
terraform_feed() {
  local src=${KUSIONPR_IMAGE_TERRAFORM:-$CACHE/testenv/bin/tofu}
  [ -x "$src" ] || die "no Terraform-compatible binary to put in the image: $src is missing (hack/testenv.sh build makes it; or name one with KUSIONPR_IMAGE_TERRAFORM)"
  mkdir -p "$ROOT/$(dirname "$FEED")"
  if ! cmp -s "$src" "$ROOT/$FEED"; then
    rm -f "$ROOT/$FEED"
    ln "$src" "$ROOT/$FEED" 2>/dev/null || cp "$src" "$ROOT/$FEED"
  fi
  sha256sum "$ROOT/$FEED" | cut -d' ' -f1
}

# inputs_key: what the image is built from. Files ignored by git are left
# out except the Terraform binary, which its checksum stands for.
inputs_key() {
  # Without git (a source archive), no key: buildah's own step cache decides.
  git -C "$ROOT" rev-parse --git-dir >/dev/null 2>&1 || { echo "no-git-$(date +%s%N)"; return; }
  {
    git -C "$ROOT" ls-files -z -co --exclude-standard | sort -z | (cd "$ROOT" && xargs -0 -r sha256sum 2>/dev/null)
    image_id "$GO_BASE"; image_id "$STATIC_BASE"; image_id "$PYTHON_BASE"; echo "$1"
  } | sha256sum | cut -d' ' -f1
}

build() {
  cache_lock "hack/image.sh build"
  need_pkg buildah "it builds and runs the image" buildah
  mkdir -p "$DIR/tmp" "$LOGS"
  # Left by a run that was stopped (the lock is held: none is another's).
  rm -rf --one-file-system "$DIR"/.rootfs.*
  pick_driver
  mkdir -p "$STORE"
  make_rootfs
  make_go_base
  make_static_base
  make_python_base
  local sum key
  sum=$(terraform_feed)
  key=$(inputs_key "$sum")
  if have_image "$IMAGE" && [ "$(cat "$DIR/image.stamp" 2>/dev/null)" = "$key|$(image_id "$IMAGE")" ]; then
    log "$IMAGE is up to date ($(image_id "$IMAGE" | cut -c1-12))"
    return
  fi
  log "building $IMAGE from $ROOT/Dockerfile (Terraform: $KUSIONPR_IMAGE_TERRAFORM_NAME, sha256 $sum)"
  # TARGETOS/TARGETARCH: BuildKit sets them itself; this buildah does not.
  # --layers keeps each step, so only what changed runs again; the cache
  # mounts (Go modules, compiled packages) live in $DIR/tmp.
  # Once more when a RUN step never started because the kernel would not
  # seal buildah's copy of its runtime (EBUSY while a page of it is still
  # mapped writable): the next attempt does not meet it, and --layers keeps
  # the steps done.
  local try
  for try in 1 2; do
    if step --keep-going build-image bh bud --pull=never --isolation chroot --layers \
      --build-arg TERRAFORM_FILE="$FEED" --build-arg TERRAFORM_SHA256="$sum" \
      --build-arg TERRAFORM_VERSION="$KUSIONPR_IMAGE_TERRAFORM_NAME" \
      --build-arg TARGETOS=linux --build-arg TARGETARCH="$(go env GOARCH)" \
      -f "$ROOT/Dockerfile" -t "$IMAGE" "$ROOT"; then
      break
    fi
    [ "$try" = 1 ] && grep -q 'sealing memfd copy: Device or resource busy' "$LOGS/build-image.log" || die "the image build failed ($LOGS/build-image.log)"
    log "the build's step did not start (the kernel would not seal buildah's runtime copy): once more"
  done
  echo "$key|$(image_id "$IMAGE")" >"$DIR/image.stamp"
  prune
  log "$IMAGE built ($(image_id "$IMAGE" | cut -c1-12))"
}

# print_env: the image and the buildah options that find it, once built.
# prune: the unnamed images (steps of earlier builds) the last build did
# not use, so the storage does not grow with every change. What it used,
# cached or new, its log lists as "--> ID".
prune() {
  local keep id name n=0
  # (buildah prints 11 characters of a new step's ID, all of a cached one's)
  keep=$(sed -n 's/^--> \(Using cache \)\{0,1\}\([0-9a-f]\{11\}\).*/\2/p' "$LOGS/build-image.log" | sort -u)
  while read -r id name; do
    [ "$name" = "<none>" ] || continue
    grep -qx "${id:0:11}" <<<"$keep" && continue
    bh rmi "$id" >/dev/null 2>&1 && n=$((n + 1))
  done < <(bh images --all --noheading --format '{{.ID}} {{.Name}}')
  [ "$n" -eq 0 ] || log "removed $n images of earlier builds"
}

print_env() {
  [ -n "$DRIVER" ] || return 0
  printf 'export %s=%q\n' KUSIONPR_TEST_IMAGE "$IMAGE" \
    KUSIONPR_TEST_BUILDAH_OPTIONS "--root $STORE/root --runroot $STORE/run --storage-driver $DRIVER" \
    KUSIONPR_TEST_BUILDAH_TMPDIR "$DIR/tmp" \
    KUSIONPR_TEST_IMAGE_TERRAFORM "$FEED"
}

# What install-terraform reports as the version: the fed binary is OpenTofu
# (what the test environment builds), not HashiCorp's Terraform.
KUSIONPR_IMAGE_TERRAFORM_NAME=${KUSIONPR_IMAGE_TERRAFORM_NAME:-opentofu-from-testenv}

case "${1:-}" in
  build) build ;;
  env) print_env ;;
  *) echo "usage: $0 build|env" >&2; exit 2 ;;
esac
