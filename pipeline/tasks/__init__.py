"""The tasks the pipeline factory knows, by name."""
from pipeline.tasks.base import Task
from pipeline.tasks.cifar10 import CIFAR10
from pipeline.tasks.imdb import IMDB
from pipeline.tasks.translation import TRANSLATION

TASKS = {task.name: task for task in (IMDB, TRANSLATION, CIFAR10)}


def get_task(name: str) -> Task:
    if name not in TASKS:
        raise ValueError(f"unknown task {name!r}; known tasks: {sorted(TASKS)}")
    return TASKS[name]


__all__ = ["TASKS", "Task", "get_task"]
