"""VersionedPusher: TFX's Pusher with an executor that never overwrites a published version."""

from tfx.components import Pusher
from tfx.dsl.components.base import executor_spec

from components.versioned_pusher.executor import Executor


class VersionedPusher(Pusher):
    """Pushes a blessed model to `<base_directory>/<version>/` (see executor.py)."""

    EXECUTOR_SPEC = executor_spec.ExecutorClassSpec(Executor)
