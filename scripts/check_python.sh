#!/usr/bin/env bash
# Stops `make setup` early, with a clear message, on a Python the pinned stack does not support.
py=${1:-python3.11}
if ! command -v "$py" >/dev/null 2>&1; then
  echo "error: tfx-transformers needs Python 3.11 ('$py' was not found)." >&2
  echo "Install Python 3.11 (for example with pyenv), or pass its path: make setup PYTHON=/path/to/python3.11" >&2
  exit 1
fi
version=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null) || {
  echo "error: tfx-transformers needs Python 3.11 ('$py' could not be run)." >&2
  exit 1
}
if [ "$version" != "3.11" ]; then
  echo "error: tfx-transformers needs Python 3.11; '$py' is Python $version." >&2
  echo "The pinned stack (TFX 1.16, TensorFlow 2.16) has wheels for 3.11 and is tested there." >&2
  echo "Pass another interpreter with: make setup PYTHON=/path/to/python3.11" >&2
  exit 1
fi
