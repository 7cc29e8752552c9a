#!/usr/bin/env bash
# A stand-in for Apache Beam's SDK image, for building the pipeline image where no image
# registry is reachable (these project's machines): Debian 12 from Debian's package mirror
# (debootstrap), with Debian's Python 3.11 and its venv module, and Beam's boot binary at
# /opt/apache/beam/boot as the SDK image has it (built from Beam's source at the lock's version:
# scripts/beam_boot.sh), imported into buildah's store.
#
# What it lacks against apache/beam_python3.11_sdk: the SDK image's preinstalled packages (the
# pipeline image installs its own lock) and its licenses folder.
#
# Usage: scripts/image_base.sh [IMAGE]   (default: localhost/tfx-transformers-base)
# Prints the tag it made or found. The tag carries a hash of this script, the boot script and
# the Beam version, so an unchanged recipe reuses the image already built on this machine
# (debootstrap takes about 2 minutes, the boot binary about 1.5 the first time).
set -euo pipefail
self=$(realpath "$0")
cd "$(dirname "$self")/.."
repository=${1:-localhost/tfx-transformers-base}
suite=bookworm
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
packages=python3,python3-venv,ca-certificates
beam=$(sed -n 's/^apache-beam==//p' requirements/runtime-lock.txt)
hash=$( (cat "$self" scripts/beam_boot.sh; echo "$beam") | sha256sum | cut -c1-12)
tag="$repository:$suite-$hash"

if buildah inspect --type image "$tag" >/dev/null 2>&1; then
  echo "$tag"
  exit 0
fi
command -v debootstrap >/dev/null || { echo "error: debootstrap is not installed (apt-get install debootstrap)" >&2; exit 1; }
boot=$(scripts/beam_boot.sh "$beam")
rootfs=$(mktemp -d /var/tmp/tfxt-base.XXXXXX)
trap 'rm -rf "$rootfs"' EXIT
echo "building the base image $tag from $mirror ($suite, $packages)" >&2
debootstrap --variant=minbase --include="$packages" "$suite" "$rootfs" "$mirror" >&2
# What a container image keeps out: apt's lists and caches.
rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/archives/*.deb
container=$(buildah from scratch)
mount=$(buildah mount "$container")
tar -C "$rootfs" -cf - . | tar -C "$mount" -xf -
install -D -m 0755 "$boot" "$mount/opt/apache/beam/boot"
buildah umount "$container" >/dev/null
buildah config --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  --env LANG=C.UTF-8 --cmd /bin/bash "$container"
buildah commit --quiet --rm "$container" "$tag" >/dev/null
echo "$tag"
