"""A task for the fork server's tests: prints what it was run as, then exits as asked.

Usage: python -m tests.launch.echo_task WORD (EXIT_CODE | raise | wait)"""

import atexit
import os
import sys
import time

if __name__ == "__main__":
    print(__name__, __spec__.name, sys.argv[1:], os.environ.get("FROM_THE_LAUNCH"), flush=True)
    print("on stderr", file=sys.stderr, flush=True)
    print("pid", os.getpid(), flush=True)
    atexit.register(lambda: print("atexit ran", flush=True))
    what = sys.argv[2]
    if what == "raise":
        raise RuntimeError("asked to fail")
    if what == "wait":
        time.sleep(600)
    sys.exit(int(what))
