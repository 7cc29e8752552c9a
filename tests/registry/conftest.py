"""The registry tests' pushed models."""

import pytest

from tests.registry.toy_model import write_toy_model


@pytest.fixture
def pushed(tmp_path):
    """pushed(n): the toy SavedModel pushed as version folder 100n (its own model per n)."""

    def write(n: int) -> str:
        path = tmp_path / "serving" / "imdb" / str(1000 + n)
        return str(path) if path.exists() else write_toy_model(path, bias=float(n))

    return write
