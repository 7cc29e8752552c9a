"""The digest of what the pipeline image is built from: every file its Dockerfile copies (the
sources of each COPY line, folders walked, Python caches left out, as .dockerignore leaves
them out) and the Dockerfile itself. scripts/image.sh labels the image with it; the tests that
launch jobs in the image compare it with the tree's, so that an image older than the code is
never taken for it. Standard library only (it runs before any environment exists).

Usage: python3 scripts/image_source.py
"""

import hashlib
import os
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
DOCKERFILE = ROOT / "kubeflow" / "Dockerfile"
LABEL = "org.tfx-transformers.source"


def copied_paths(dockerfile: pathlib.Path = DOCKERFILE) -> list:
    """The sources of every COPY line (the last word is the destination)."""
    sources = []
    for line in dockerfile.read_text().splitlines():
        match = re.match(r"^COPY\s+(.+)$", line.strip())
        if match:
            sources += [word for word in match.group(1).split()[:-1] if not word.startswith("--")]
    return sources


def digest(root: pathlib.Path = ROOT) -> str:
    found = hashlib.sha256()
    files = [DOCKERFILE]
    for source in copied_paths():
        path = root / source
        if path.is_dir():
            for directory, folders, names in os.walk(path):
                folders[:] = sorted(f for f in folders if f != "__pycache__")
                files += [
                    pathlib.Path(directory) / n for n in sorted(names) if not n.endswith(".pyc")
                ]
        elif path.exists():
            files.append(path)
    for path in files:
        found.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    return found.hexdigest()[:16]


if __name__ == "__main__":
    sys.stdout.write(digest() + "\n")
