"""Named points where a test stops a process to kill it there (tests/e2e/test_faults.py), rather
than killing it after a sleep that a faster or slower machine turns into another point.

With TFXT_HALT_AT naming a point, the process that reaches it writes {"point", "pid"} to the file
TFXT_HALT_FILE names (a gs:// object where the bucket is what the test and a pod share), then
waits there to be killed. Without the variable a point is one lookup.

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
    path = os.environ[HALT_FILE]
    if path.startswith("gs://"):
        import tensorflow as tf

        with tf.io.gfile.GFile(path, "w") as f:
            f.write(json.dumps({"point": name, "pid": os.getpid()}))
    else:
        with open(path, "w") as f:
            json.dump({"point": name, "pid": os.getpid()}, f)
    while True:
        time.sleep(60)
