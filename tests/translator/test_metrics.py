"""The TFMA metrics of the translation task, fed the way the Evaluator feeds them."""

import math

import numpy as np
import sacrebleu
from tensorflow_model_analysis.metrics import metric_types, metric_util

from trainer_module.translator.metrics import WORDS, DecodedBleu, MaskedTokenAccuracy, words

HYPOTHESES = [b"a man is running on the street .", b"two dogs play in the snow ."]
REFERENCES = [b"a man is running on the street .", b"two dogs are playing in the snow ."]


def compute(metric, extracts):
    """Runs the metric's combiner as Beam's CombinePerKey would: an accumulator per half of the
    extracts, merged, then the output."""
    (computation,) = metric.computations()
    combiner = computation.combiner
    inputs = [metric_util.to_standard_metric_inputs(e) for e in extracts]
    halves = []
    for part in (inputs[::2], inputs[1::2]):
        accumulator = combiner.create_accumulator()
        for element in part:
            accumulator = combiner.add_input(accumulator, element)
        halves.append(accumulator)
    metrics = combiner.extract_output(combiner.merge_accumulators(halves))
    return metrics[metric_types.MetricKey(name=metric.name)]


def test_bleu_scores_tensorflow_byte_strings_as_a_float_matching_sacrebleu():
    extracts = [
        {"labels": np.array([r]), "predictions": np.array([h])}
        for h, r in zip(HYPOTHESES, REFERENCES)
    ]
    score = compute(DecodedBleu(), extracts)
    expected = sacrebleu.corpus_bleu(
        [h.decode() for h in HYPOTHESES], [[r.decode() for r in REFERENCES]], tokenize="13a"
    ).score
    assert isinstance(score, float)
    assert math.isclose(score, expected, rel_tol=1e-9)
    assert 0 < score < 100
    perfect = [{"labels": np.array([r]), "predictions": np.array([r])} for r in REFERENCES]
    assert math.isclose(compute(DecodedBleu(), perfect), 100.0)


def test_the_two_bleus_of_natural_text_cased_13a_and_lowercase_word_tokens():
    hypotheses = [b"A man rides a bike.", b"two dogs play in the snow."]
    references = [b"A man rides a bike.", b"Two dogs play in the snow!"]
    extracts = [
        {"labels": np.array([r]), "predictions": np.array([h])}
        for h, r in zip(hypotheses, references)
    ]
    cased = compute(DecodedBleu(), extracts)
    assert math.isclose(
        cased,
        sacrebleu.corpus_bleu(
            [h.decode() for h in hypotheses], [[r.decode() for r in references]]
        ).score,
    )
    lowered = compute(
        DecodedBleu(name="bleu_lowercase_tokenized", lowercase=True, tokenize=WORDS), extracts
    )
    assert math.isclose(
        lowered,
        sacrebleu.corpus_bleu(
            ["a man rides a bike .", "two dogs play in the snow ."],
            [["a man rides a bike .", "two dogs play in the snow !"]],
            tokenize="none",
        ).score,
    )
    assert cased < lowered < 100  # "two"/"Two" costs the cased score, "!"/"." both
    assert words("Don't—stop, Café!<br />Now") == "don ' t — stop , café ! now"


def test_token_accuracy_sums_correct_and_real_tokens_over_examples():
    extracts = [
        {
            "labels": np.array([b"x"]),
            "predictions": {
                "translation": np.array([b"x"]),
                "correct_tokens": np.array([c], dtype=np.float32),
                "target_tokens": np.array([t], dtype=np.float32),
            },
        }
        for c, t in ((3, 4), (5, 6), (0, 0))
    ]  # the last: served without a target
    assert compute(MaskedTokenAccuracy(), extracts) == 8 / 10
