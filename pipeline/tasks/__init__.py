"""The tasks the pipeline factory knows, by name: each module of this package defines a `TASK`
(a new task adds a module and a line here)."""

from typing import Dict

from pipeline.tasks.base import Task
from pipeline.tasks.cifar10 import TASK as CIFAR10
from pipeline.tasks.imdb import TASK as IMDB
from pipeline.tasks.translation import TASK as TRANSLATION

TASKS: Dict[str, Task] = {t.name: t for t in (CIFAR10, IMDB, TRANSLATION)}
# Names that say what a user's data is: `--task text` for texts in any classes (a ticket
# router), `--task images` for a folder of photos. Each is the task it names, with its
# embedded sample (IMDB's reviews, CIFAR-10's images) as default data; pipelines, records and
# results keep the task's own name.
ALIASES: Dict[str, str] = {"text": IMDB.name, "images": CIFAR10.name}


def task_name(name: str) -> str:
    """The task's own name for `name` or its alias; raises ValueError for neither."""
    name = ALIASES.get(name, name)
    if name not in TASKS:
        raise ValueError(
            f"unknown task {name!r}; known tasks: {', '.join(sorted(TASKS))} "
            f"(or {', '.join(f'{a} for {t}' for a, t in sorted(ALIASES.items()))})"
        )
    return name


def get_task(name: str) -> Task:
    return TASKS[task_name(name)]


__all__ = ["ALIASES", "TASKS", "Task", "get_task", "task_name"]
