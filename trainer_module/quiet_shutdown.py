"""Silences what TensorFlow's finalizers print while the interpreter shuts down.

At exit, once module globals are gone, `AtomicFunction.__del__` and its kin raise (TypeError:
'NoneType' object is not callable) and Python prints each as `Exception ignored in: ...` with a
traceback: harmless, but a dozen of them after a run look like a failure. `install()` drops
exactly those: exceptions raised by a TensorFlow object's finalizer while the interpreter is
finalizing. Everything else still reaches Python's own hook. Every process that runs the
project's code installs it, Beam's worker processes included (trainer_module/__init__.py,
components/__init__.py)."""

import sys

_INSTALLED = []


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
