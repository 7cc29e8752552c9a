"""The walk-throughs' runnable blocks (a `<!-- runnable -->` line before a ```bash block) run as
written, in order, from a fresh folder holding the repository's .venv: what a reader pastes
works. The slow tier (each walk-through trains a model); the default tier checks that every
walk-through has runnable blocks, so that the marker cannot silently vanish."""

import glob
import os
import re
import subprocess

import pytest

from pipeline import configs

WALKTHROUGHS = sorted(glob.glob(str(configs.REPO_ROOT / "docs" / "walkthroughs" / "*.md")))
RUNNABLE = re.compile(r"<!-- runnable -->\s*```bash\n(.*?)```", re.S)


def runnable_blocks(path: str) -> list:
    with open(path, encoding="utf-8") as f:
        return RUNNABLE.findall(f.read())


@pytest.mark.parametrize("path", WALKTHROUGHS, ids=os.path.basename)
def test_every_walkthrough_has_runnable_blocks(path):
    assert len(runnable_blocks(path)) >= 3


@pytest.mark.slow
@pytest.mark.parametrize("path", WALKTHROUGHS, ids=os.path.basename)
def test_a_walkthroughs_runnable_blocks_run_as_written(path, tmp_path):
    os.symlink(configs.REPO_ROOT / ".venv", tmp_path / ".venv")
    for block in runnable_blocks(path):
        result = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", block],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=900,
        )
        assert result.returncode == 0, f"{block}\n{result.stderr[-3000:]}"
