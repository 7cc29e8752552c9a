#!/usr/bin/env bash
# Regenerates the two locks: requirements/lock.txt (requirements/dev.in: everything `make setup`
# installs) and requirements/runtime-lock.txt (requirements/runtime.in alone: what the pipeline
# image installs), the second constrained by the first, so that both pin the same versions.
# With --runtime-only, only the runtime lock is regenerated from the existing full lock.
#
# TFX 1.16 declares Requires-Python <3.11 and its resolution under pip backtracks for tens of
# minutes, so the set is resolved once with uv for Python 3.10 markers on manylinux_2_28, with
# protobuf overridden to the 4.x line every TFX 1.16 library supports, and installed on 3.11
# with --no-deps (see `make setup`).
set -euo pipefail
cd "$(dirname "$0")/.."
UV=${UV:-.venv/bin/uv}
compile() {
  UV_PYTHON_DOWNLOADS=never "$UV" pip compile "$@" \
    --override requirements/overrides.txt \
    --python-version 3.10 --python-platform x86_64-manylinux_2_28 \
    --no-header --quiet
}
if [ "${1:-}" != "--runtime-only" ]; then
  compile requirements/dev.in -o requirements/lock.txt
  echo "wrote requirements/lock.txt ($(grep -c '==' requirements/lock.txt) pins)"
fi
compile requirements/runtime.in --constraint requirements/lock.txt -o requirements/runtime-lock.txt
echo "wrote requirements/runtime-lock.txt ($(grep -c '==' requirements/runtime-lock.txt) pins)"
