"""The pipeline image the launch tests run jobs in (`make image`; TFXT_TEST_IMAGE names
another): it must be in buildah's store here and built from this tree (its label holds the
digest of what it was built from, scripts/image_source.py). Without buildah or the image, or
with an image older than the code, the tests that need it skip, unless REQUIRE_IMAGE=1 (set by
CI, which builds it first), which turns that into a failure."""

import json
import os
import shutil
import subprocess
import sys

import pytest

from pipeline import configs

IMAGE = os.environ.get("TFXT_TEST_IMAGE", "localhost/tfx-transformers:dev")
LABEL = "org.tfx-transformers.source"


def image_labels(image: str) -> dict:
    result = subprocess.run(
        ["buildah", "inspect", "--type", "image", image], capture_output=True, text=True
    )
    if result.returncode != 0:
        return {}
    config = json.loads(result.stdout).get("OCIv1", {}).get("config", {})
    return config.get("Labels") or {"": "no labels"}


def tree_digest() -> str:
    script = configs.REPO_ROOT / "scripts" / "image_source.py"
    return subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, check=True
    ).stdout.strip()


def pipeline_image() -> str:
    """IMAGE, when it can run the tree's code; else a skip (a failure with REQUIRE_IMAGE=1)."""
    problem = None
    if not shutil.which("buildah"):
        problem = "buildah is not installed (apt-get install buildah debootstrap)"
    else:
        labels = image_labels(IMAGE)
        if not labels:
            problem = f"no image {IMAGE} here: make image"
        elif labels.get(LABEL) != tree_digest():
            problem = f"{IMAGE} was built from other sources than this tree's: make image"
    if problem:
        if os.environ.get("REQUIRE_IMAGE") == "1":
            pytest.fail(problem)
        pytest.skip(problem)
    return IMAGE
