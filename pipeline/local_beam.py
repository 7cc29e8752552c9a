"""Beam's DirectRunner for runs on this machine, less its first try on the Prism runner, and
with the signatures of DoFn methods and the views of pipeline options built once rather than on
every look."""

import functools
import inspect
import logging
import types
import weakref

import apache_beam
from apache_beam.options.pipeline_options import PipelineOptions
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
        if patches_apply():  # before the pipeline's transforms are applied
            remember_function_signatures()
            remember_option_views()

    def run_pipeline(self, pipeline, options):
        self.is_interactive()
        return super().run_pipeline(pipeline, options)


# The Beam releases whose internals the two speed-ups below were read from and tested on; on
# another, the runner runs as Beam's own (slower), and says so once.
PATCHED_BEAM = ("2.74.",)


def patches_apply(version: str = "") -> bool:
    """Whether this Beam (`version`: default the installed one) is one the speed-ups know."""
    version = version or apache_beam.__version__
    if version.startswith(PATCHED_BEAM):
        return True
    if not _WARNED:
        logging.getLogger(__name__).warning(
            "Beam %s: the local runner's speed-ups (tested on %s) are off",
            version,
            ", ".join(p + "x" for p in PATCHED_BEAM),
        )
        _WARNED.append(version)
    return False


_WARNED: list = []


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


def remember_option_views() -> None:
    """Beam builds a fresh view of the pipeline's options (`options.view_as(TypeOptions)`: a
    new argparse parser of every option the class declares, and a parse of the flags) each time
    it applies a transform or checks a type hint: 4,700 views in a tiny IMDB run, about 5% of
    its time. A view holds no state of its own (its values live in the dictionary that every
    view of the options shares), so each options object keeps one view per class, and builds it
    again only if its flags or values dictionary were replaced. Idempotent."""
    if not hasattr(PipelineOptions.view_as, "__wrapped__"):
        PipelineOptions.view_as = _remembered_views(  # type: ignore[method-assign]
            PipelineOptions.view_as
        )


def _remembered_views(view_as):
    views: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # options -> {class: view}

    @functools.wraps(view_as)
    def remembered(self, cls):
        known = views.get(self)
        if known is None:
            known = views[self] = {}
        view = known.get(cls)
        if (
            view is None
            or view._all_options is not self._all_options
            or (view._flags is not self._flags)
        ):
            view = known[cls] = view_as(self, cls)
        return view

    return remembered
