"""A text classifier of four classes from a `text,label` CSV, end to end through the CLI, for
both text families: the classes read from the data when the pipeline is built, a softmax head
of four, TFMA's multi-class metrics gating the blessing, the confusion matrix and calibration
drawn in the run report, and a pushed model that answers raw text with the four names.

The slow tier (a pipeline run per family). The default tier covers the parts: the classes'
order and the ExampleGen's labels (tests/components/test_review_classes.py,
test_reviews_example_gen.py), and what the data's classes set in the pipeline
(tests/pipeline/test_data_classes.py)."""

import csv
import random

import pytest
import tensorflow as tf

from tests.e2e.cli_util import run_cli

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

# Each queue's words are in the tiny BERT checkpoint's vocabulary (lab/tiny_bert.py), so that
# both families see whole words.
QUEUES = {
    "billing": "money waste lot little nothing every",
    "login": "watch watched watching see saw seen",
    "shipping": "book novel trailer festival screen town",
    "praise": "wonderful brilliant superb excellent amazing perfect",
}
FILLER = "the my a is was not what how when it this".split()
CLASSES = sorted(QUEUES)  # the order the pipeline gives them: by name


def write_tickets(folder, rows: int = 320, seed: int = 0):
    """A CSV of support tickets in four queues, each text three of its queue's words among
    filler words."""
    folder.mkdir(parents=True)
    generator = random.Random(seed)
    with open(folder / "tickets.csv", "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["text", "label"])
        for i in range(rows):
            queue = list(QUEUES)[i % len(QUEUES)]
            words = generator.sample(QUEUES[queue].split(), 3) + generator.sample(FILLER, 5)
            generator.shuffle(words)
            writer.writerow([" ".join(words), queue])
    return folder


@pytest.mark.parametrize("family", ["text_encoder", "bert"])
def test_four_queues_train_gate_report_and_answer_with_their_names(family, request, tmp_path):
    data = write_tickets(tmp_path / "tickets")
    bert = family == "bert"
    extra = ["--bert-preset", request.getfixturevalue("tiny_bert_checkpoint")] if bert else []
    (summary,) = run_cli(
        "run",
        "--task",
        "imdb",
        "--model",
        family,
        "--data",
        data,
        "--output",
        tmp_path / "out",
        "--preset",
        "tiny" if bert else "small",
        "--train-steps",
        "120" if bert else "60",
        *extra,
        "--eval-steps",
        "3",
        # The tiny random BERT learns four classes slowly: well above chance (0.25) is enough
        # to show the head, the metrics and the export; the text encoder learns them.
        "--blessing-threshold",
        "0.35" if bert else "0.9",
    ).lines
    assert summary["blessed"] is True, summary["blessing_failures"]
    metrics = summary["metrics"]
    assert metrics["sparse_categorical_accuracy"] >= (0.35 if bert else 0.9)
    assert "binary_accuracy" not in metrics and "auc" not in metrics
    per_class = [metrics[f"f1_score (class_id={i})"] for i in range(4)]
    assert metrics["f1_score"] == pytest.approx(sum(per_class) / 4, abs=1e-4)  # macro average
    assert summary["registered"]["version"] == "1"
    report = open(summary["report"], encoding="utf-8").read()
    assert 'class="plot confusion-matrix"' in report and 'class="plot calibration"' in report
    assert "Text classification into 4 classes (billing, login, praise, shipping)" in report
    model = tf.saved_model.load(summary["pushed_model"])
    texts = ["I saw it, watched it", "the trailer of the novel", "money, a lot of waste"]
    answer = model.signatures["classify_text"](text=tf.constant(texts))
    assert answer["probabilities"].shape == (3, 4)
    assert answer["classes"].numpy().astype(str).tolist() == [CLASSES] * 3
    names = [n.decode() for n in answer["label_name"].numpy()]
    assert set(names) <= set(CLASSES)
    if not bert:
        assert names == ["login", "shipping", "billing"]
    assert "score" not in answer  # P(class 1) is a binary model's
