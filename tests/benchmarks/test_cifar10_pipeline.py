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


def test_a_recorded_recipe_runs_as_the_base_preset_with_its_overrides_under_set():
    """The presets the task shipped before live beside their benchmark, not in vit/config.py:
    `--preset hybrid` still trains the config its results files name."""
    import argparse

    from benchmarks import report
    from trainer_module.vit.config import POOLED_HYBRID, PRESETS, VitConfig

    args = argparse.Namespace(preset="hybrid", overrides=["mixup_alpha=0.3"])
    cifar10_pipeline.recorded_recipe(args)
    assert args.preset == "base" and "hybrid" not in PRESETS
    expected = VitConfig(**POOLED_HYBRID, warmup_fraction=0.25, mixup_alpha=0.3)
    assert report.model_config("cifar10", args) == expected
    args = argparse.Namespace(preset="hybrid_strided", overrides=[])
    cifar10_pipeline.recorded_recipe(args)
    strided = report.model_config("cifar10", args)
    assert (strided.d_model, strided.grid_size, strided.flip_test_time) == (192, 4, True)
    args = argparse.Namespace(preset="hybrid_airbench", overrides=[])
    cifar10_pipeline.recorded_recipe(args)  # a shipped preset is left as it is
    assert args.preset == "hybrid_airbench" and args.overrides == []
