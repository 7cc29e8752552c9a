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
