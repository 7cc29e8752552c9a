"""TFX's file system calls with the types they return for str paths (its stubs say bytes or
str): what the components list, always str."""

import os
from typing import List

from tfx.dsl.io import fileio


def listdir(path: str) -> List[str]:
    """The names in folder `path` (fileio.listdir)."""
    return [os.fsdecode(name) for name in fileio.listdir(path)]


def glob(pattern: str) -> List[str]:
    """The paths matching `pattern` (fileio.glob)."""
    return [os.fsdecode(path) for path in fileio.glob(pattern)]
