import logging

import apache_beam as beam
from apache_beam.testing.util import assert_that, equal_to

from pipeline import configs


def test_local_runs_run_beam_without_trying_prism(caplog):
    caplog.set_level(logging.INFO, logger="apache_beam")
    with beam.Pipeline(argv=configs.BEAM_MODES["in_memory"]) as pipeline:
        squares = pipeline | beam.Create([1, 2, 3]) | beam.Map(lambda x: x * x)
        assert_that(squares, equal_to([1, 4, 9]))
    assert type(pipeline.runner).__module__ == "pipeline.local_beam"
    assert not [r for r in caplog.records if "prism" in r.getMessage().lower()]
    # Both modes run on it (multi_processing: the same runner, on worker processes).
    for args in configs.BEAM_MODES.values():
        assert f"--runner={configs.LOCAL_BEAM_RUNNER}" in args


class Squares(beam.DoFn):
    def process(self, element, scale=beam.DoFn.SideInputParam):
        yield element * element


def test_dofn_signatures_are_read_once_per_function_and_answer_as_beams_own():
    from apache_beam.transforms import core

    from pipeline import local_beam

    local_beam.remember_function_signatures()
    local_beam.remember_function_signatures()  # idempotent: one layer
    remembered = core.get_function_args_defaults
    beams_own = remembered.__wrapped__
    assert not hasattr(beams_own, "__wrapped__")
    for f in (Squares().process, Squares.process, lambda x, y=2: x, max):
        assert remembered(f) == beams_own(f)

    reads = []
    counted = local_beam._remembered(lambda f: reads.append(f) or beams_own(f))
    first, second = Squares(), Squares()
    args, defaults = counted(first.process)
    assert (args, defaults) == (["element", "scale"], [beam.DoFn.SideInputParam])
    args.append("mutated")  # the caller's own list
    assert counted(second.process) == (["element", "scale"], [beam.DoFn.SideInputParam])
    assert len(reads) == 1  # one read for every instance's bound method
    counted(Squares.process)  # the function itself (with self): its own entry
    assert counted(Squares.process)[0] == ["self", "element", "scale"]
    assert len(reads) == 2
    counted(max), counted(max)  # builtins and other callables: read each time, as Beam does
    assert len(reads) == 4


def test_option_views_are_built_once_per_class_and_share_the_options_values():
    from apache_beam.options.pipeline_options import (
        DirectOptions,
        PipelineOptions,
        StandardOptions,
        TypeOptions,
    )

    from pipeline import local_beam

    local_beam.remember_option_views()
    local_beam.remember_option_views()  # idempotent: one layer
    assert not hasattr(PipelineOptions.view_as.__wrapped__, "__wrapped__")
    beams_own = PipelineOptions.view_as.__wrapped__

    options = PipelineOptions(["--runner=DirectRunner", "--direct_num_workers=3"], job_name="j")
    types = options.view_as(TypeOptions)
    assert options.view_as(TypeOptions) is types  # built once
    assert str(types) == str(beams_own(options, TypeOptions))  # and answering as Beam's own
    assert options.view_as(DirectOptions).direct_num_workers == 3
    assert options.view_as(StandardOptions).runner == "DirectRunner"

    types.disable_beartype = True  # a write through one view: seen by every other, new or not
    assert beams_own(options, TypeOptions).disable_beartype is True
    assert options.get_all_options()["disable_beartype"] is True
    other = PipelineOptions(["--runner=DirectRunner"])
    assert other.view_as(TypeOptions) is not types  # each options object its own views
    assert other.view_as(TypeOptions).disable_beartype is False

    options._all_options = dict(options._all_options)  # values replaced: a view of the new ones
    assert options.view_as(TypeOptions) is not types
    assert options.view_as(TypeOptions)._all_options is options._all_options


def test_the_speed_ups_apply_only_to_the_beam_releases_they_were_tested_on(caplog):
    from pipeline import local_beam

    assert local_beam.patches_apply()  # the locked Beam
    assert local_beam.patches_apply("2.74.0")
    local_beam._WARNED.clear()
    assert not local_beam.patches_apply("2.80.0")
    assert "Beam 2.80.0: the local runner's speed-ups (tested on 2.74.x) are off" in caplog.text
