#!/usr/bin/env bash
# Builds the pipeline image (kubeflow/Dockerfile) from the repository root: `make image`.
#
# With Docker where a daemon answers (`docker build`, on Beam's SDK image); otherwise with
# buildah, chroot isolation (these project's machines, where no container runtime runs a
# container and no registry is reachable: the base is then scripts/image_base.sh's stand-in).
#
# Settings (environment, or make variables):
#   IMAGE       the tag to build (default localhost/tfx-transformers:dev)
#   GPU         1: TensorFlow's CUDA libraries too; 0: CPU only (default 0)
#   BASE_IMAGE  the image to build on (default: Beam's SDK image with Docker, the stand-in with
#               buildah)
#   CA_BUNDLE   a CA bundle the build's downloads must trust (a TLS-inspecting proxy: these
#               machines pass /etc/ssl/certs/ca-certificates.crt); mounted for the build's RUN
#               steps only, never written into the image
#   UV_CACHE    a uv cache folder to reuse (buildah; default: ~/.cache/uv when it exists), so
#               the lock's wheels are not downloaded again; mounted, not copied
#   BUILDER     docker or buildah (default: docker when its daemon answers, else buildah)
set -euo pipefail
cd "$(dirname "$0")/.."
image=${IMAGE:-localhost/tfx-transformers:dev}
gpu=${GPU:-0}
builder=${BUILDER:-}
if [ -z "$builder" ]; then
  if command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1; then
    builder=docker
  elif command -v buildah >/dev/null 2>&1; then
    builder=buildah
  else
    echo "error: no Docker daemon answers and buildah is not installed: install one" \
      "(Debian: apt-get install buildah debootstrap)" >&2
    exit 1
  fi
fi

# The digest of what the image is built from (scripts/image_source.py), as a label the launch
# tests read: an image older than the tree is never taken for it.
source=$(python3 scripts/image_source.py)
args=(--build-arg "GPU=$gpu" --label "org.tfx-transformers.source=$source" -f kubeflow/Dockerfile -t "$image")
[ -n "${BASE_IMAGE:-}" ] && args+=(--build-arg "BASE_IMAGE=$BASE_IMAGE")
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
if [ -n "${CA_BUNDLE:-}" ]; then
  [ -f "$CA_BUNDLE" ] || { echo "error: CA_BUNDLE=$CA_BUNDLE is not a file" >&2; exit 1; }
  # pip reads /etc/pip.conf, uv /etc/uv/uv.toml: both name the mounted bundle.
  printf '[global]\ncert = /etc/ssl/certs/ca-certificates.crt\n' > "$scratch/pip.conf"
  printf 'system-certs = true\n' > "$scratch/uv.toml"
fi

started=$(date +%s)
if [ "$builder" = docker ]; then
  if [ -n "${CA_BUNDLE:-}" ]; then
    echo "error: CA_BUNDLE is a buildah option here; with Docker, configure the daemon's proxy" >&2
    exit 1
  fi
  docker build "${args[@]}" .
else
  if [ -z "${BASE_IMAGE:-}" ]; then
    base=$(scripts/image_base.sh)
    args+=(--build-arg "BASE_IMAGE=$base")
  fi
  mounts=()
  if [ -n "${CA_BUNDLE:-}" ]; then
    mounts+=(-v "$(realpath "$CA_BUNDLE"):/etc/ssl/certs/ca-certificates.crt:ro"
      -v "$scratch/pip.conf:/etc/pip.conf:ro" -v "$scratch/uv.toml:/etc/uv/uv.toml:ro")
  fi
  cache=${UV_CACHE:-$HOME/.cache/uv}
  if [ -d "$cache" ]; then
    mounts+=(-v "$(realpath "$cache"):/root/.cache/uv" --build-arg UV_NO_CACHE=0)
  fi
  # The host's UTS namespace: chroot isolation shares the host's network and /etc/hosts but
  # names each RUN step's container by its id, which nothing resolves; the build's Beam worker
  # (pipeline/image_check.py) reaches its runner at the hostname, as Docker's and a pod's resolve.
  buildah bud --isolation chroot --uts host --layers "${mounts[@]}" "${args[@]}" .
fi
seconds=$(( $(date +%s) - started ))
size=$("$builder" image inspect --format '{{.Size}}' "$image" 2>/dev/null || echo "")
echo "built $image with $builder in ${seconds} s${size:+ (${size} bytes)}"
