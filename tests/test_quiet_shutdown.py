"""TensorFlow's finalizers print nothing at interpreter exit; every other unraisable exception
still reaches Python's hook."""

import sys
import types

from trainer_module import quiet_shutdown


def unraisable(obj):
    return types.SimpleNamespace(
        object=obj, exc_type=TypeError, exc_value=TypeError("x"), exc_traceback=None, err_msg=None
    )


def test_only_tensorflow_finalizers_at_exit_are_dropped(monkeypatch):
    seen = []
    monkeypatch.setattr(sys, "unraisablehook", seen.append)
    monkeypatch.setattr(quiet_shutdown, "_INSTALLED", [])
    quiet_shutdown.install()
    quiet_shutdown.install()  # once is enough: the second call changes nothing
    hook = sys.unraisablehook

    def tf_finalizer():  # stands in for AtomicFunction.__del__
        pass

    tf_finalizer.__module__ = "tensorflow.python.eager.polymorphic_function.atomic_function"

    def own_finalizer():
        pass

    monkeypatch.setattr(sys, "is_finalizing", lambda: True)
    hook(unraisable(tf_finalizer))
    hook(unraisable(own_finalizer))
    assert [u.object for u in seen] == [own_finalizer]
    monkeypatch.setattr(sys, "is_finalizing", lambda: False)
    hook(unraisable(tf_finalizer))  # while running, TensorFlow's too are reported
    assert [u.object for u in seen] == [own_finalizer, tf_finalizer]
