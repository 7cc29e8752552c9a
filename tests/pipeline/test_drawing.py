"""The pipeline figure (pipeline/drawing.py) draws what create_pipeline built."""

import re

from pipeline.drawing import reduced_edges, rows, svg
from tests.pipeline.test_factory import build


def test_the_drawing_has_every_component_and_only_the_dependencies_no_chain_implies(
    aclimdb_dir, tmp_path
):
    pipeline = build(aclimdb_dir, tmp_path, preset="tiny", train_steps=2)
    drawing = svg(pipeline, "imdb")
    ids = [c.id for c in pipeline.components]
    assert re.findall(r'text-anchor="middle">([^<]+)</text>', drawing) == ids
    edges = reduced_edges(pipeline.components)
    assert drawing.count("<line ") == len(edges)
    assert ("StatisticsGen", "SchemaGen") in edges and ("Trainer", "Evaluator") in edges
    # Transform reads the examples, but through StatisticsGen, SchemaGen, ... already below it.
    assert ("ReviewsExampleGen", "Transform") not in edges
    row = rows(pipeline.components)
    assert all(row[parent] < row[child] for parent, child in edges)  # every arrow points down
    assert row["latest_blessed_model_resolver"] == row["Evaluator"] - 1  # beside its reader
