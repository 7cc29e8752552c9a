#!/usr/bin/env bash
# A stand-in for Apache Beam's SDK image, for building the pipeline image where no image
# registry is reachable (these project's machines): Debian 12 from Debian's package mirror
# (debootstrap), with Debian's Python 3.11 and its venv module, imported into buildah's store.
#
# What it lacks against apache/beam_python3.11_sdk: Beam's boot binary (/opt/apache/beam/boot,
# which Dataflow starts as its worker harness) and the SDK image's preinstalled packages. Pipeline
# steps run their own command lines and do not need it; a Dataflow worker would.
#
# Usage: scripts/image_base.sh [IMAGE]   (default: localhost/tfx-transformers-base)
# Prints the tag it made or found. The tag carries a hash of this script, so an unchanged script
# reuses the image already built on this machine (debootstrap takes about 2 minutes).
set -euo pipefail
repository=${1:-localhost/tfx-transformers-base}
suite=bookworm
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
packages=python3,python3-venv,ca-certificates
hash=$(sha256sum "$0" | cut -c1-12)
tag="$repository:$suite-$hash"

if buildah inspect --type image "$tag" >/dev/null 2>&1; then
  echo "$tag"
  exit 0
fi
command -v debootstrap >/dev/null || { echo "error: debootstrap is not installed (apt-get install debootstrap)" >&2; exit 1; }
rootfs=$(mktemp -d /var/tmp/tfxt-base.XXXXXX)
trap 'rm -rf "$rootfs"' EXIT
echo "building the base image $tag from $mirror ($suite, $packages)" >&2
debootstrap --variant=minbase --include="$packages" "$suite" "$rootfs" "$mirror" >&2
# What a container image keeps out: apt's lists and caches.
rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/archives/*.deb
container=$(buildah from scratch)
mount=$(buildah mount "$container")
tar -C "$rootfs" -cf - . | tar -C "$mount" -xf -
buildah umount "$container" >/dev/null
buildah config --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  --env LANG=C.UTF-8 --cmd /bin/bash "$container"
buildah commit --quiet --rm "$container" "$tag" >/dev/null
echo "$tag"
