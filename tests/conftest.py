"""Shared fixtures: tiny corpora the tests write themselves, and one real training run per model
family (its Trainer entry point on in-memory data), shared by the session's tests."""

import json
import os
import pathlib

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

POSITIVE = [
    "a wonderful film, I loved it",
    "brilliant acting and a great story",
    "superb, moving and funny",
    "the best movie this year!",
    "great fun, loved the cast",
    "excellent and charming <br /><br />truly great",
    "wonderful score, brilliant cast",
    "I loved every minute: superb",
]
NEGATIVE = [
    "a terrible film, I hated it",
    "awful acting and a boring story",
    "dull, lifeless and flat",
    "the worst movie this year!",
    "boring mess, hated the cast",
    "terrible and tedious <br /><br />truly awful",
    "awful score, boring cast",
    "I hated every minute: dull",
]
REVIEWS = [{"text": t, "label": 1} for t in POSITIVE] + [{"text": t, "label": 0} for t in NEGATIVE]

# German -> English pairs a tiny translator learns exactly.
PAIRS = [
    ("Ein Mann läuft.", "A man is running."),
    ("Eine Frau sitzt.", "A woman is sitting."),
    ("Zwei Hunde spielen im Park.", "Two dogs are playing in the park."),
    ("Ein Kind lacht.", "A child is laughing."),
]

COLOURS = {"red": [220, 30, 30], "green": [30, 200, 40], "blue": [30, 40, 220]}


def review_spec():
    import tensorflow as tf

    return {
        "text": tf.io.FixedLenFeature([], tf.string),
        "label": tf.io.FixedLenFeature([], tf.int64),
    }


def pair_spec():
    import tensorflow as tf

    return {
        "source": tf.io.FixedLenFeature([], tf.string),
        "target": tf.io.FixedLenFeature([], tf.string),
    }


def image_spec():
    import tensorflow as tf

    return {
        "image": tf.io.FixedLenFeature([], tf.string),
        "label": tf.io.FixedLenFeature([], tf.int64),
        "label_name": tf.io.FixedLenFeature([], tf.string),
    }


def picture(name: str, size: int, seed: int) -> np.ndarray:
    """A noisy image of one colour of COLOURS."""
    rng = np.random.default_rng(seed)
    noise = rng.normal(0, 12, size=(size, size, 3))
    return np.clip(np.asarray(COLOURS[name]) + noise, 0, 255).astype(np.uint8)


def write_aclimdb(root: pathlib.Path, splits=("train", "test"), copies: int = 1) -> pathlib.Path:
    """Writes `root/aclImdb/<split>/{pos,neg}/ID_RATING.txt`; returns `root`."""
    for split in splits:
        review_id = 0
        for _ in range(copies):
            for folder, texts, ratings in (
                ("pos", POSITIVE, (7, 8, 9, 10)),
                ("neg", NEGATIVE, (1, 2, 3, 4)),
            ):
                for i, text in enumerate(texts):
                    path = root / "aclImdb" / split / folder / f"{review_id}_{ratings[i % 4]}.txt"
                    path.parent.mkdir(parents=True, exist_ok=True)
                    path.write_text(text, "utf-8")
                    review_id += 1
    return root


@pytest.fixture
def aclimdb_dir(tmp_path) -> pathlib.Path:
    return write_aclimdb(tmp_path / "data")


@pytest.fixture(scope="session")
def tiny_bert_preset(tmp_path_factory) -> str:
    """A randomly initialised 2-layer BERT saved as a local KerasHub preset directory."""
    from lab.tiny_bert import write_tiny_preset

    return write_tiny_preset(
        str(tmp_path_factory.mktemp("bert") / "preset"),
        hidden_dim=16,
        intermediate_dim=32,
        max_sequence_length=64,
    )


@pytest.fixture(scope="session")
def tiny_bert_checkpoint(tmp_path_factory) -> str:
    """A randomly initialised 2-layer BERT in Hugging Face's layout (safetensors), with the
    pretraining heads and key names of the original BERT scripts."""
    from lab.tiny_bert import write_tiny_checkpoint

    return write_tiny_checkpoint(
        str(tmp_path_factory.mktemp("bert_hf") / "checkpoint"),
        style="pretraining",
        hidden_dim=16,
        intermediate_dim=32,
        max_sequence_length=64,
    )


# One real Trainer run per family (tests/family_util.py), shared by the model, training and
# serving tests and the fresh-process check of every export. The text encoder and the ViT train
# under mixed precision ("on": bfloat16 on a CPU), so their exports show float32 outputs of a
# bfloat16-trained model; the translator, overfitted to exact outputs, and BERT in float32.


TEXT_ENCODER_OVERRIDES = {
    "vocab_size": 100,
    "max_length": 12,
    "truncation_head": 8,
    "num_layers": 2,
    "pooling": "cls",
    "dropout": 0.0,
}


@pytest.fixture(scope="session")
def text_encoder_run(tmp_path_factory):
    from tests.family_util import run_family

    return run_family(
        "text_encoder",
        REVIEWS,
        review_spec(),
        str(tmp_path_factory.mktemp("text_encoder")),
        overrides=TEXT_ENCODER_OVERRIDES,
        train_steps=30,
        mixed_precision="on",
    )


TRANSLATOR_OVERRIDES = {
    "max_source_length": 12,
    "max_target_length": 12,
    "max_decode_length": 11,
    "dropout": 0.0,
    "label_smoothing": 0.0,
    "peak_learning_rate": 3e-3,
    "warmup_fraction": 0.033,  # 10 of the 300 steps
    "batch_size": 4,
    "beam_width": 2,
    "shared_vocabulary": True,
}
TRANSLATOR_STEPS = 300


@pytest.fixture(scope="session")
def translator_run(tmp_path_factory):
    """Overfitted to PAIRS: its translations are exact. With one vocabulary for both languages
    and one embedding (the translation pipeline's e2e run has separate ones)."""
    from tests.family_util import run_family

    return run_family(
        "translator",
        [{"source": s, "target": t} for s, t in PAIRS],
        pair_spec(),
        str(tmp_path_factory.mktemp("translator")),
        overrides=TRANSLATOR_OVERRIDES,
        train_steps=TRANSLATOR_STEPS,
        eval_steps=1,
    )


@pytest.fixture(scope="session")
def vit_run(tmp_path_factory):
    from tests.family_util import run_family
    from tests.image_util import encode

    rows = [
        {"image": encode(picture(name, 16, seed)), "label": label, "label_name": name}
        for seed in range(6)
        for label, name in enumerate(COLOURS)
    ]
    return run_family(
        "vit",
        rows,
        image_spec(),
        str(tmp_path_factory.mktemp("vit")),
        # The hybrid's convolutional stem (16x16 -> 4x4 tokens) and flip test-time augmentation.
        overrides={
            "batch_size": 6,
            "crop_padding": 0,
            "tokenizer": "hybrid",
            "conv_filters": 8,
            "flip_test_time": True,
        },
        epochs=14,
        mixed_precision="on",
    )


@pytest.fixture(scope="session")
def bert_run(tmp_path_factory, tiny_bert_checkpoint):
    """From a Hugging Face checkpoint, with the wide path (the tiny preset's). Its steps are not
    compiled by XLA: compiling each of the four batch lengths in each phase was most of its time
    (about 40 s on the AVX2 EPYC); the slow tier's BERT pipeline (tests/e2e/test_bert_pipeline.py)
    trains with the default XLA steps."""
    from tests.family_util import run_family

    return run_family(
        "bert",
        REVIEWS,
        review_spec(),
        str(tmp_path_factory.mktemp("bert_run")),
        overrides={
            "backbone_preset": tiny_bert_checkpoint,
            "sequence_length": 16,
            "truncation_head": 4,
            "batch_size": 8,
            "length_multiple": 4,  # batches trimmed to 4, 8, 12 or 16 pieces
            "jit_compile": False,
        },
        train_steps=10,
    )


@pytest.fixture(scope="session", autouse=True)
def mlflow_imported():
    """Imports MLflow once per session, before any test's capturing fixture (capsys, capfd)
    swaps sys.stderr: its import reconfigures logging, which closes absl's handler, and that
    handler closes its stream when it is not the sys.stderr of the moment. Inside a capsys
    test its stream is pytest's own capture file, and every later test of the process fails
    with "I/O operation on closed file" (depending on which test imported MLflow first)."""
    import absl.logging  # noqa: F401
    import mlflow  # noqa: F401


# With pytest-xdist (make test: two workers, --dist loadgroup), the tests that share a run go
# to one worker, so each run happens once: the session's runs by name, and the tests of a module
# that share one of its module-scoped fixtures by module.
SHARED_RUNS = {
    "imdb_run": "imdb_run",
    "imdb_reruns": "imdb_run",
    "imdb_next_span": "imdb_run",
    "imdb_tuned": "imdb_run",
    "text_encoder_run": "family_runs",
    "translator_run": "family_runs",
    "vit_run": "family_runs",
    "bert_run": "family_runs",
}


def uses_a_module_fixture(item) -> bool:
    definitions = item._fixtureinfo.name2fixturedefs.values()
    return any(d[-1].scope == "module" for d in definitions)


# The slow tier's longest tests (the launches in the image, ten minutes the longest), started
# first: xdist hands out work in collection order, and one started last ends the tier alone.
LONGEST_FIRST = ("tests/e2e/test_launch_slow.py",)


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups
def pytest_collection_modifyitems(config, items):
    items.sort(key=lambda item: item.nodeid.split("::")[0] not in LONGEST_FIRST)  # stable
    for item in items:
        groups = sorted({SHARED_RUNS[name] for name in item.fixturenames if name in SHARED_RUNS})
        if not groups and uses_a_module_fixture(item):
            groups = [item.module.__name__]
        if groups:
            item.add_marker(pytest.mark.xdist_group(groups[0]))


# TEST_TIMINGS=<file> (benchmarks/test_suite.py sets it): the controller writes each worker's
# busy seconds and each test file's, to show which worker and which file are the critical path.
TIMINGS: dict = {"workers": {}, "files": {}}


def pytest_runtest_logreport(report):
    if not os.environ.get("TEST_TIMINGS"):
        return
    node = getattr(report, "node", None)  # the xdist worker that ran it (None without xdist)
    worker = node.gateway.id if node is not None else "main"
    path = report.nodeid.split("::")[0]
    for table, key in ((TIMINGS["workers"], worker), (TIMINGS["files"], path)):
        table[key] = table.get(key, 0.0) + report.duration


def pytest_sessionfinish(session):
    path = os.environ.get("TEST_TIMINGS")
    if path and not hasattr(session.config, "workerinput"):  # the controller, or no xdist
        with open(path, "w") as f:
            json.dump(TIMINGS, f, indent=1)
