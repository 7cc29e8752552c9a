"""TFMA metrics over the served translator's outputs: BLEU and masked token accuracy.

Two BLEUs of the same translations against the raw references:
- `bleu`: sacreBLEU's standard, cased, with its `13a` tokenization (the number papers and
  tools report for detokenized output; the blessing gates on it);
- `bleu_lowercase_tokenized`: both sides lower-cased and tokenized as the word vocabulary is
  (punctuation set apart), sacreBLEU tokenize "none": the published Multi30k recipes' BLEU.

`DecodedBleu` is TFMA's own BLEU (its n-gram statistics and sacrebleu's scoring). TFMA 0.47.1's
version cannot be used as is on a TensorFlow model's outputs: it expects Python `str` where
TensorFlow gives `bytes`, and it reports a sacrebleu `BLEUScore` object, which TFMA can neither
write as a number nor compare with a threshold. The combiner below decodes the strings and
reports the score as a float; the statistics and the formula are TFMA's.

Referenced from the EvalConfig by class name and module, so the Evaluator imports this module
(`Evaluator(module_path=...)` and `MetricConfig(module=...)`).
"""

import re
import unicodedata

import apache_beam as beam
import numpy as np
from tensorflow_model_analysis.metrics import bleu, metric_types, metric_util

# The served translator's WordPiece ops: TFMA's workers import this module alone.
from trainer_module.serving import custom_ops  # noqa: F401

BLEU_NAME = "bleu"
LOWERCASE_BLEU_NAME = "bleu_lowercase_tokenized"
TOKEN_ACCURACY_NAME = "token_accuracy"
WORDS = "words"  # DecodedBleu's tokenize: lower-cased words, punctuation apart (words())


def words(text: str) -> str:
    """`text` as the word vocabulary tokenizes it (trainer_module/preprocessing/text.py:
    normalize): lower-cased, `<br />` as a space, every punctuation or symbol character set
    apart, single spaces."""
    text = re.sub(r"<br\s*/?>", " ", text.lower())
    return " ".join(
        "".join(f" {c} " if unicodedata.category(c)[0] in "PS" else c for c in text).split()
    )


def _text(value) -> str:
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


class _DecodedBleuCombiner(bleu._BleuCombiner):  # pylint: disable=protected-access
    """TFMA's BLEU combiner, fed decoded strings (one reference per example), scored as a float;
    with `words`, both sides tokenized by words() first."""

    def __init__(self, *args, words: bool = False, **kwargs):
        super().__init__(*args, **kwargs)
        self._words = words

    def add_input(self, accumulator, element):
        references, hypotheses, _ = next(
            metric_util.to_label_prediction_example_weight(
                element,
                eval_config=self.eval_config,
                model_name=self.model_name,
                output_name=self.output_name,
                example_weighted=False,
                flatten=False,
                squeeze=False,
            )
        )
        hypotheses = [_text(h) for h in np.ravel(hypotheses)]
        references = [[_text(r) for r in np.ravel(references)]]  # one set of references
        if self._words:
            hypotheses = [words(h) for h in hypotheses]
            references = [[words(r) for r in references[0]]]
        stats = self._extract_corpus_statistics(hypotheses, references)
        stats.append(accumulator)
        return self.merge_accumulators(stats)

    def extract_output(self, accumulator):
        return {self.key: float(self._compute_score_from_accumulator(accumulator).score)}


def _bleu(
    name: str, eval_config, model_name: str, output_name: str, lowercase: bool, tokenize: str
) -> metric_types.MetricComputations:
    key = metric_types.MetricKey(name=name, model_name=model_name, output_name=output_name)
    return [
        metric_types.MetricComputation(
            keys=[key],
            preprocessors=None,
            combiner=_DecodedBleuCombiner(
                eval_config=eval_config,
                model_name=model_name,
                output_name=output_name,
                key=key,
                lowercase=lowercase,
                force=True,
                words=tokenize == WORDS,
                tokenize="none" if tokenize == WORDS else tokenize,
                smooth_method="exp",
                smooth_value=None,
                effective_order=False,
            ),
        )
    ]


class DecodedBleu(metric_types.Metric):
    """Corpus BLEU (0-100) of the `prediction_key` strings against the `label_key` strings,
    with sacreBLEU's `tokenize` ("13a", the default: its standard; "none"; or WORDS)."""

    def __init__(self, name: str = BLEU_NAME, lowercase: bool = False, tokenize: str = "13a"):
        super().__init__(
            metric_util.merge_per_key_computations(_bleu),
            name=name,
            lowercase=lowercase,
            tokenize=tokenize,
        )


def _outputs(element, model_name: str) -> dict:
    """The served model's output dict for `model_name` (candidate or baseline)."""
    predictions = element.predictions
    if isinstance(predictions, dict) and model_name in predictions:
        predictions = predictions[model_name]
    if not isinstance(predictions, dict) or "correct_tokens" not in predictions:
        found = sorted(predictions) if isinstance(predictions, dict) else type(predictions).__name__
        raise ValueError(
            "token accuracy needs the model's 'correct_tokens' and 'target_tokens' "
            f"outputs; got {found}"
        )
    return predictions


class _MaskedTokenAccuracyCombiner(beam.CombineFn):
    """Sums the served model's per-example correct_tokens and target_tokens."""

    def __init__(self, key: metric_types.MetricKey, model_name: str):
        self._key = key
        self._model_name = model_name

    def create_accumulator(self):
        return np.zeros(2)

    def add_input(self, accumulator, element):
        outputs = _outputs(element, self._model_name)
        accumulator[0] += float(np.sum(outputs["correct_tokens"]))
        accumulator[1] += float(np.sum(outputs["target_tokens"]))
        return accumulator

    def merge_accumulators(self, accumulators):
        return np.sum(list(accumulators), axis=0)

    def extract_output(self, accumulator):
        correct, total = accumulator
        return {self._key: float(correct / total) if total else float("nan")}


def _token_accuracy(
    name: str, eval_config, model_name: str, output_name: str
) -> metric_types.MetricComputations:
    key = metric_types.MetricKey(name=name, model_name=model_name, output_name=output_name)
    return [
        metric_types.MetricComputation(
            keys=[key], preprocessors=None, combiner=_MaskedTokenAccuracyCombiner(key, model_name)
        )
    ]


class MaskedTokenAccuracy(metric_types.Metric):
    """Teacher-forced accuracy over real target tokens (padding excluded), from the served
    model's `correct_tokens` / `target_tokens` outputs: the same quantity as training's."""

    def __init__(self, name: str = TOKEN_ACCURACY_NAME):
        super().__init__(metric_util.merge_per_key_computations(_token_accuracy), name=name)


metric_types.register_metric(DecodedBleu)
metric_types.register_metric(MaskedTokenAccuracy)
