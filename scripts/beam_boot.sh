#!/usr/bin/env bash
# Apache Beam's boot binary for its Python SDK container (the ENTRYPOINT of Beam's SDK image,
# /opt/apache/beam/boot: what Dataflow, and a portable runner's PROCESS, DOCKER or worker-pool
# environment, start an SDK harness through), built from Beam's own source at the locked Beam
# version, from Go's module proxy (package sdks/v2/python/container; static, CGO off).
#
# Usage: scripts/beam_boot.sh [VERSION]   (default: the lock's apache-beam)
# Prints the binary's path: .tools/beam/VERSION/boot, built once (about a minute and a half
# on 2 cores with an empty Go cache). Needs Go (the module's go.mod asks for 1.26).
set -euo pipefail
cd "$(dirname "$0")/.."
version=${1:-$(sed -n 's/^apache-beam==//p' requirements/runtime-lock.txt)}
[ -n "$version" ] || { echo "error: no apache-beam pin in requirements/runtime-lock.txt" >&2; exit 1; }
target=.tools/beam/$version/boot
if [ ! -x "$target" ]; then
  command -v go >/dev/null || { echo "error: building Beam's boot binary needs Go (https://go.dev/dl/)" >&2; exit 1; }
  bin=$(mktemp -d)
  trap 'rm -rf "$bin"' EXIT
  echo "building Beam's boot binary $version (github.com/apache/beam/sdks/v2/python/container)" >&2
  GOBIN=$bin CGO_ENABLED=0 go install -trimpath \
    "github.com/apache/beam/sdks/v2/python/container@v$version" >&2
  mkdir -p "$(dirname "$target")"
  mv "$bin/container" "$target"
fi
echo "$PWD/$target"
