"""Pusher executor that never overwrites or reuses a published model version."""

from components.versioned_pusher.component import VersionedPusher
from components.versioned_pusher.executor import Executor, publish_new_version

__all__ = ["Executor", "VersionedPusher", "publish_new_version"]
