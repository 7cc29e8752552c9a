"""Named points where a test stops a process to kill it there (tests/e2e/test_faults.py), rather
than killing it after a sleep that a faster or slower machine turns into another point.

With TFXT_HALT_AT naming a point, the process that reaches it writes {"point", "pid"} to the file
TFXT_HALT_FILE names, then waits there to be killed. Without the variable a point is one lookup.

Points: "transform" (the text encoder's preprocessing_fn, while Transform traces it),
"registry.uploading" (the MLflow registry, its version's run created, the model not yet logged),
"trainer.backed_up" (the Trainer's chief, a backup interval just written complete).
"""

import json
import os
import time

HALT_AT = "TFXT_HALT_AT"
HALT_FILE = "TFXT_HALT_FILE"


def point(name: str) -> None:
    """Halts here when HALT_AT names `name` (see the module's docstring); else returns."""
    if os.environ.get(HALT_AT) != name:
        return
    with open(os.environ[HALT_FILE], "w") as f:
        json.dump({"point": name, "pid": os.getpid()}, f)
    while True:
        time.sleep(60)
