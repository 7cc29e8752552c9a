"""Silences what TensorFlow's finalizers print while the interpreter shuts down.

At exit, once module globals are gone, `AtomicFunction.__del__` and its kin raise (TypeError:
'NoneType' object is not callable) and Python prints each as `Exception ignored in: ...` with a
traceback: harmless, but a dozen of them after a run look like a failure. `install()` drops
exactly those: exceptions raised by a TensorFlow object's finalizer while the interpreter is
finalizing. Everything else still reaches Python's own hook. Installed by
a named call where a process of the project starts, never by an import: the CLI
(pipeline/cli.py), the TFX CLI's pipeline file (pipeline/local_runner.py) and the Trainer's
entry point (training/run_fn.py, for a Trainer in a job of its own). Beam's worker processes
and the cloud's component containers keep Python's hook: their exit lines go to their logs."""

import sys

_INSTALLED: list = []


def install() -> None:
    if _INSTALLED:
        return
    previous = sys.unraisablehook

    def hook(unraisable) -> None:
        if sys.is_finalizing() and _from_tensorflow(unraisable.object):
            return
        previous(unraisable)

    sys.unraisablehook = hook
    _INSTALLED.append(hook)


def _from_tensorflow(obj) -> bool:
    module = getattr(obj, "__module__", None) or getattr(type(obj), "__module__", "") or ""
    return module.startswith("tensorflow")
