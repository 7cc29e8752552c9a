"""Beam's DirectRunner for runs on this machine, less its first try on the Prism runner, and
with the signatures of DoFn methods read once rather than on every look."""

import functools
import inspect
import types
import weakref

from apache_beam.runners.direct import direct_runner
from apache_beam.transforms import core


class DirectRunner(direct_runner.SwitchingDirectRunner):
    """The runner `--runner=DirectRunner` picks (the FnApiRunner, in memory or on worker
    processes), without the Prism attempt Beam's DirectRunner makes first. Prism is a Go binary
    fetched from GitHub: offline the fetch fails, and with a stub location it fails after
    starting a worker pool (0.2-0.9 s for each of the four Beam pipelines of a small run); the
    fallback is this same runner. The DirectRunner skips Prism for interactive pipelines, and
    that is the only use it makes of the flag."""

    def __init__(self):
        super().__init__()
        remember_function_signatures()  # before the pipeline's transforms are applied

    def run_pipeline(self, pipeline, options):
        self.is_interactive()
        return super().run_pipeline(pipeline, options)


def remember_function_signatures() -> None:
    """Beam reads a DoFn's arguments with `inspect.signature` for every method of the DoFn,
    each time it builds, translates or runs one of its bundles: 220,000 reads in a tiny IMDB
    run, about a tenth of its time. A function's signature is fixed once it is defined, so each
    is read once per function (a bound method's, once per underlying function). Idempotent;
    only this process's Beam sees it (the workers of multi_processing runs read as before)."""
    if not hasattr(core.get_function_args_defaults, "__wrapped__"):
        core.get_function_args_defaults = _remembered(core.get_function_args_defaults)


def _remembered(read):
    bound: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
    plain: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

    @functools.wraps(read)
    def args_defaults(f):
        if isinstance(f, types.MethodType) and inspect.isfunction(f.__func__):
            table, key = bound, f.__func__
        elif inspect.isfunction(f):
            table, key = plain, f
        else:  # partials, callable objects, builtins: read each time, as Beam does
            return read(f)
        if key not in table:
            table[key] = read(f)
        args, defaults = table[key]
        return list(args), list(defaults)  # callers own their lists

    return args_defaults
