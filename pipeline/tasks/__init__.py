"""The tasks the pipeline factory knows, by name: each module of this package defines a `TASK`
(a new task adds a module and a line here)."""

from typing import Dict

from pipeline.tasks.base import Task
from pipeline.tasks.cifar10 import TASK as CIFAR10
from pipeline.tasks.imdb import TASK as IMDB
from pipeline.tasks.translation import TASK as TRANSLATION

TASKS: Dict[str, Task] = {t.name: t for t in (CIFAR10, IMDB, TRANSLATION)}


def get_task(name: str) -> Task:
    if name not in TASKS:
        raise ValueError(f"unknown task {name!r}; known tasks: {sorted(TASKS)}")
    return TASKS[name]


__all__ = ["TASKS", "Task", "get_task"]
