#!/usr/bin/env bash
# Regenerates requirements/lock.txt from requirements/requirements.in.
#
# TFX 1.16 declares Requires-Python <3.11 and its resolution under pip backtracks for tens of
# minutes, so the set is resolved once with uv for Python 3.10 markers on manylinux_2_28, with
# protobuf overridden to the 4.x line every TFX 1.16 library supports, and installed on 3.11
# with --no-deps (see `make setup`).
set -euo pipefail
cd "$(dirname "$0")/.."
UV=${UV:-.venv/bin/uv}
UV_PYTHON_DOWNLOADS=never "$UV" pip compile requirements/requirements.in \
  --override requirements/overrides.txt \
  --python-version 3.10 --python-platform x86_64-manylinux_2_28 \
  --no-header --quiet -o requirements/lock.txt
echo "wrote requirements/lock.txt ($(grep -c '==' requirements/lock.txt) pins)"
