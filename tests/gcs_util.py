"""The Cloud Storage emulator for tests (pipeline/launch/gcs.py: fake-gcs-server, which `make
gcs-emulator` builds from Go's module proxy, behind the project's gateway). Without the binary
the tests that need it skip, unless REQUIRE_GCS_EMULATOR=1 (set by CI), which makes a missing
emulator a failure."""

import contextlib
import os
from typing import Iterator

import pytest

from pipeline.launch.gcs import GcsEmulator, emulator_binary


def require_emulator() -> str:
    try:
        return emulator_binary()
    except FileNotFoundError as error:
        if os.environ.get("REQUIRE_GCS_EMULATOR") == "1":
            pytest.fail(str(error))
        pytest.skip(str(error))


@contextlib.contextmanager
def running_emulator(folder, buckets=("bucket",), environ: bool = True) -> Iterator[GcsEmulator]:
    """An emulator over `folder` with `buckets`, this process pointed at it while inside
    (`environ`: os.environ holds its environment, as a task's would); stopped after, its
    objects not saved."""
    require_emulator()
    emulator = GcsEmulator(str(folder)).start()
    saved = dict(os.environ)
    try:
        for bucket in buckets:
            emulator.make_bucket(bucket)
        if environ:
            os.environ.update(emulator.environment())
        yield emulator
    finally:
        os.environ.clear()
        os.environ.update(saved)
        emulator.close(save=False)


def names(emulator: GcsEmulator, bucket: str, prefix: str = "") -> list:
    """Every object's name under `prefix`, in the order Cloud Storage lists them."""
    return [b.name for b in emulator.client().list_blobs(bucket, prefix=prefix)]
