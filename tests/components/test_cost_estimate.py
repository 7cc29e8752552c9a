"""The cost projection: a measured machine kind's speed as measured, another kind's the
slowest measured with the range, nothing on a GPU or for an unmeasured preset; and the speeds
file as the default runs' results files give it."""

import pytest

from components.cost_estimate import estimate

ZEN4 = {"cpu": "AMD EPYC", "cpu_family": "25", "cpu_model_number": "17", "cores": 2}
ZEN5 = {"cpu": "AMD EPYC", "cpu_family": "26", "cpu_model_number": "2", "cores": 2}
AVX2 = {"cpu": "AMD EPYC", "cpu_family": "23", "cpu_model_number": "49", "cores": 2}


def row(machine, trainer_seconds, other_seconds, fixed_seconds=20.0, name="zen4"):
    return {
        "result": f"imdb_pipeline/{name}",
        "machine": {**machine, "bfloat16_flags": ["avx512_bf16"]},
        "batch_size": 32,
        "train_steps": 1000,
        "train_examples": 16000,
        "trainer_seconds": trainer_seconds,
        "other_seconds": other_seconds,
        "fixed_seconds": fixed_seconds,
    }


def project(rows, here, **kwargs):
    kwargs = {"train_examples": 1600, "train_steps": 500, "batch_size": 64, **kwargs}
    return estimate.project(rows, here=here, **kwargs)


def test_a_measured_machine_kind_gets_its_own_speed_at_the_runs_steps_batch_and_examples():
    rows = [row(ZEN5, 60.0, 40.0, name="zen5"), row(ZEN4, 100.0, 80.0)]
    projected = project(rows, ZEN4)
    # 500 steps of 64 at 0.1 s per step of 32; 20 s fixed and a tenth of the other 60 s.
    assert projected.training_minutes == round(500 * 0.1 * 2 / 60, 2)
    assert projected.projected_minutes == round((100 + 20 + 6) / 60, 2)
    assert projected.epochs == 20.0 and projected.basis == (
        "as measured on this machine kind (imdb_pipeline/zen4)"
    )
    capped = project(rows, ZEN4, time_budget_minutes=1)
    assert capped.training_minutes == 1.0 and capped.projected_minutes == round(86 / 60, 2)


def test_an_unmeasured_kind_gets_the_slowest_measured_kind_and_the_range():
    projected = project([row(ZEN5, 60.0, 40.0, name="zen5"), row(ZEN4, 100.0, 80.0)], AVX2)
    assert projected.projected_minutes == round(126 / 60, 2)  # Zen 4's, the slower
    assert projected.basis.startswith("this CPU kind was not measured: the slowest measured")
    assert (
        "CPU family 25 model 17" in projected.basis and "CPU family 26 model 2" in projected.basis
    )
    # Zen 5: 500 steps at 0.06 s per 32, 20 s fixed and a tenth of the other 20 s.
    assert projected.basis.endswith(f"give {(60 + 20 + 2) / 60:.1f} min to 2.1 min")


def test_an_unmeasured_kind_trains_at_the_runs_own_steps_timed_here():
    rows = [row(ZEN5, 60.0, 40.0, name="zen5"), row(ZEN4, 100.0, 80.0)]
    timings = []

    def timed_step():
        timings.append(1)
        return 0.3

    projected = project(rows, AVX2, timed_step=timed_step, changed=["max_length=512"])
    assert timings == [1]
    assert projected.training_minutes == round(500 * 0.3 / 60, 2)
    # The rest is Zen 4's, the slowest: 20 s fixed and a tenth of the other 60 s.
    assert projected.projected_minutes == round((500 * 0.3 + 26) / 60, 2)
    assert projected.basis.startswith(
        "this CPU kind was not measured: training from steps of this run's model timed here "
        "(0.3 s a step"
    )
    assert "CPU family 25 model 17" in projected.basis
    assert projected.warnings == ()  # the run's own model, on this CPU
    capped = project(rows, AVX2, timed_step=lambda: 0.3, time_budget_minutes=1)
    assert capped.training_minutes == 1.0
    for measured, here, gpus in [(rows, ZEN4, 0), (rows, AVX2, 1), ([], AVX2, 0)]:
        project(measured, here, gpus=gpus, timed_step=timed_step)  # nothing to time for
    assert timings == [1]


@pytest.mark.parametrize(
    "rows, gpus, why",
    [
        ([], 0, "no measured speed of this family and preset"),
        ([row(ZEN4, 100.0, 80.0)], 1, "training on a GPU: the measured speeds are CPUs'"),
    ],
)
def test_no_projection_says_why_and_how_to_cap_training(rows, gpus, why):
    projected = project(rows, ZEN4, gpus=gpus)
    assert projected.projected_minutes is None and projected.basis == why
    assert estimate.describe(projected) == [
        "1,600 training examples, 500 steps in batches of 64 (20 epochs)",
        f"no projected time: {why}; --time-budget MINUTES caps training",
    ]


def test_the_speeds_file_is_what_the_default_runs_results_files_give():
    from benchmarks import speeds

    rows = speeds.speeds()["speeds"]
    assert {(r["task"], r["family"], r["preset"]) for r in rows} == {
        ("imdb", "text_encoder", "small"),
        ("imdb", "bert", "default"),
        ("translation", "translator", "base"),
        ("cifar10", "vit", "hybrid_airbench"),
    }
    # 1,248 steps of 32 over two epochs: the 19,968 reviews of IMDB's seeded 80%.
    te = next(r for r in rows if r["result"] == "imdb_pipeline/text_encoder-small-zen4")
    assert (te["batch_size"], te["train_examples"]) == (32, 19968)
    with open(estimate.SPEEDS_FILE, encoding="utf-8") as f:
        import json

        assert json.load(f) == speeds.speeds(), "run python -m benchmarks.speeds"


def test_the_plan_says_what_the_projection_leaves_out():
    projected = project([row(ZEN4, 100.0, 60.0)], ZEN4)
    lines = estimate.plan_lines(projected, {"time_budget_minutes": None})
    assert len(lines) == 2 and lines[0].startswith("1,600 training examples, 500 steps")
    lines = estimate.plan_lines(projected, {"spans": 3, "pretrain_epochs": 4.0, "tuner_trials": 5})
    assert lines[0].endswith("in the newest span; the window's other 2 add theirs")
    assert lines[2:] == [
        "masked-token pretraining comes first: 100 steps (4 epochs of the training texts), "
        "not projected",
        "the Tuner's 5 trials come first, not projected",
    ]
    replaced = estimate.plan_lines(
        projected, {"pretrain_epochs": 1.0, "pretrain_objective": "replaced"}
    )
    assert replaced[2].startswith("replaced-token pretraining comes first: 25 steps")
    with_unlabeled = estimate.plan_lines(projected, {"pretrain_epochs": 1.0}, unlabeled=1_600)
    assert with_unlabeled[2] == (
        "masked-token pretraining comes first: 50 steps (1 epochs of 3,200 texts: 1,600 "
        "training, 1,600 unlabelled), not projected"
    )


def test_a_cpu_without_bfloat16_unlike_every_measured_kind_is_warned_about():
    rows = [row(ZEN5, 60.0, 40.0, name="zen5"), row(ZEN4, 100.0, 80.0)]
    laptop = {**AVX2, "bfloat16_flags": []}
    (warning,) = project(rows, laptop).warnings
    assert warning.startswith("this CPU has no bfloat16 instructions and every measured kind")
    lines = estimate.describe(project(rows, laptop))
    assert lines[-1] == f"warning: {warning}"
    assert project(rows, {**AVX2, "bfloat16_flags": ["avx512_bf16"]}).warnings == ()
    assert project(rows, {**ZEN4, "bfloat16_flags": []}).warnings == ()  # a measured kind


def test_settings_that_change_the_measured_preset_are_warned_about():
    rows = [row(ZEN4, 100.0, 80.0)]
    here = {**ZEN4, "bfloat16_flags": ["avx512_bf16"]}
    (warning,) = project(rows, here, changed=["max_length=512"]).warnings
    assert warning.startswith("the run changes the measured preset (max_length=512)")
    assert project(rows, here).warnings == ()
    assert project([], here, changed=["max_length=512"]).warnings == ()  # no projection at all


def test_the_plan_names_the_classes_read_from_the_data():
    projected = project([row(ZEN4, 100.0, 80.0)], ZEN4)
    lines = estimate.plan_lines(projected, {"classes": ["billing", "login", "refund"]})
    assert lines[1] == "3 classes: billing, login, refund"


def test_a_step_that_could_not_be_timed_falls_back_to_the_slowest_measured_kind():
    rows = [row(ZEN5, 60.0, 40.0, name="zen5"), row(ZEN4, 100.0, 80.0)]
    projected = project(rows, AVX2, timed_step=lambda: None)
    assert projected.basis.startswith("this CPU kind was not measured: the slowest measured")
