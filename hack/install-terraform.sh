#!/usr/bin/env bash
# Installs a pinned Terraform release into DEST, checking its SHA-256.
# The Dockerfile runs it at image build time; CI runs it outside Docker too.
#   hack/install-terraform.sh DEST [VERSION] [SHA256] [FILE] [ARCH]
# The pinned checksums are those of HashiCorp's release zips, as its
# SHA256SUMS file lists them. ARCH (amd64 or arm64; default this machine's)
# picks the zip: the image build passes its target's, so an arm64 image gets
# an arm64 Terraform even when built on amd64.
# FILE, when given, is used instead of the download: HashiCorp's release zip
# (checked against the pinned checksum unless SHA256 is passed) or a binary
# (SHA256 must then be passed). It is for builds that cannot reach
# releases.hashicorp.com; a FILE that does not match is refused as a
# download would be.
set -euo pipefail
dest=${1:?usage: install-terraform.sh DEST [VERSION] [SHA256] [FILE] [ARCH]}
version=${2:-1.11.4}
file=${4:-}
arch=${5:-$(uname -m)}
case "$arch" in x86_64|amd64) arch=amd64 ;; aarch64|arm64) arch=arm64 ;; esac
declare -A pinned=(
  [1.11.4/amd64]=1ce994251c00281d6845f0f268637ba50c0005657eb3cf096b92f753b42ef4dc
  [1.11.4/arm64]=a43d1d0da9b9bab214a8305a39db0e40869572594ccf50c416a7756499143633
)
sum=${3:-}
case "$file" in
  ''|*.zip) sum=${sum:-${pinned[$version/$arch]:-}} ;;
  *) [ -n "$sum" ] || { echo "install-terraform: $file is a binary: pass its SHA-256 as the third argument" >&2; exit 1; } ;;
esac
[ -n "$sum" ] || { echo "install-terraform: no checksum pinned for terraform $version on $arch; pass it as the third argument" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [ -n "$file" ]; then
  from=$file
  [ -f "$file" ] || { echo "install-terraform: $file: no such file" >&2; exit 1; }
  cp "$file" "$tmp/download"
else
  from="https://releases.hashicorp.com/terraform/$version/terraform_${version}_linux_${arch}.zip"
  curl -fsSL --retry 3 -o "$tmp/download" "$from"
fi
echo "$sum  $tmp/download" | sha256sum -c - >/dev/null 2>&1 || { echo "install-terraform: checksum mismatch for $from (want $sum)" >&2; exit 1; }
case "$file" in
  ''|*.zip)
    (cd "$tmp" && python3 -c 'import zipfile,sys; zipfile.ZipFile(sys.argv[1]).extract("terraform")' download 2>/dev/null || unzip -q download terraform) ;;
  *) mv "$tmp/download" "$tmp/terraform" ;;
esac
install -m 0755 "$tmp/terraform" "$dest/terraform"
echo "install-terraform: terraform $version for linux/$arch from $from (sha256 $sum) in $dest"
