"""The tasks the pipeline factory knows, by name: every module of this package that defines a
`TASK` (adding a task adds one module here)."""

import importlib
import pkgutil
from typing import Dict

from pipeline.tasks.base import Task


def _discover() -> Dict[str, Task]:
    tasks = {}
    for module in sorted(m.name for m in pkgutil.iter_modules(__path__)):
        task = getattr(importlib.import_module(f"{__name__}.{module}"), "TASK", None)
        if task is not None:
            tasks[task.name] = task
    return tasks


TASKS: Dict[str, Task] = _discover()


def get_task(name: str) -> Task:
    if name not in TASKS:
        raise ValueError(f"unknown task {name!r}; known tasks: {sorted(TASKS)}")
    return TASKS[name]


__all__ = ["TASKS", "Task", "get_task"]
