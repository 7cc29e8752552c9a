import json
import os

from benchmarks import cifar10_pipeline


def test_references_hold_each_anchor_schedule_measured_on_these_images(tmp_path, monkeypatch):
    table = {
        "columns": ["script", "epochs", "runs", "val accuracy: mean", "std", "training PFLOP"],
        "rows": [
            ["airbench94.py", 20.0, 3, 0.91, 0.001, 0.654],
            ["airbench95.py", 12.3, 2, 0.92, 0, 1.029],
        ],
    }
    (tmp_path / "longer.json").write_text(json.dumps({"tables": [table]}))
    monkeypatch.setattr(cifar10_pipeline, "ANCHOR_RESULTS", str(tmp_path))
    monkeypatch.setattr(cifar10_pipeline, "ANCHORS_ON_THESE_IMAGES", ("longer", "not-measured"))
    added = cifar10_pipeline.references()[len(cifar10_pipeline.REFERENCES) :]
    assert added == [
        (
            "val accuracy",
            "accuracy",
            0.91,
            "anchor on these JPEGs: airbench94, 20 epochs, 0.654 PFLOP (3 runs)",
        ),
        (
            "val accuracy",
            "accuracy",
            0.92,
            "anchor on these JPEGs: airbench95, 12.3 epochs, 1.029 PFLOP (2 runs)",
        ),
    ]


def test_the_anchor_results_named_are_in_the_repository_and_told_apart():
    for name in cifar10_pipeline.ANCHORS_ON_THESE_IMAGES:
        assert os.path.exists(os.path.join(cifar10_pipeline.ANCHOR_RESULTS, f"{name}.json")), name
    labels = [label for *_, label in cifar10_pipeline.references()]
    assert len(set(labels)) == len(labels)  # each schedule and measurement told apart
