"""Translation: sentence pairs -> an encoder-decoder Transformer that translates raw strings."""

import gzip
import json
import os
from typing import Sequence

import tensorflow_model_analysis as tfma

from components.parallel_corpus_example_gen import ParallelCorpusExampleGen
from pipeline import configs
from pipeline.tasks.base import Corpus, Gate, Task, overall_gate, text_drift_checks
from trainer_module import features
from trainer_module.family import TRANSLATOR, ModelFamily, Option

# The embedded corpus reaches ~98 with the default steps; chance is ~0.
GATE = Gate(
    "bleu",
    "corpus BLEU (cased, sacreBLEU 13a), in points from 0 to 100",
    default=20.0,
    low=0.0,
    high=100.0,
)


def example_gen(
    data_dir: str, eval_percent: int, source_lang: str, target_lang: str, spans: int = 1
):
    return ParallelCorpusExampleGen(
        data_dir,
        source_lang,
        target_lang,
        eval_percent=eval_percent,
        split_seed=configs.SPLIT_SEED,
        spans=spans,
    )


def eval_config(
    min_bleu: float, family: ModelFamily, classes: Sequence[str] = ()
) -> tfma.EvalConfig:
    """BLEU of the served model's decoded `translation` against the raw `reference`: cased
    with sacreBLEU's 13a tokenization (`bleu`), and lower-cased and tokenized as the word
    vocabulary is (`bleu_lowercase_tokenized`); teacher-forced token accuracy; overall and by
    source length.

    The blessing gates on `bleu` over the whole eval split (value and no worse than the latest
    blessed model); slices are reported, not gated. The metrics are the family's own, in its
    evaluator module (the translator's: trainer_module/translator/metrics.py).
    """
    metrics = family.evaluator_module
    return tfma.EvalConfig(
        model_specs=[
            tfma.ModelSpec(
                signature_name="serving_default",
                label_key=features.REFERENCE,  # a transformed feature (transform_features)
                prediction_key="translation",
                preprocessing_function_names=["transform_features"],
            )
        ],
        slicing_specs=[
            tfma.SlicingSpec(),
            tfma.SlicingSpec(feature_keys=[features.SOURCE_LENGTH_BUCKET]),
        ],
        metrics_specs=[
            tfma.MetricsSpec(
                metrics=[
                    tfma.MetricConfig(class_name="ExampleCount"),
                    tfma.MetricConfig(
                        class_name="DecodedBleu",
                        module=metrics,
                        per_slice_thresholds=overall_gate(min_bleu),
                    ),
                    tfma.MetricConfig(
                        class_name="DecodedBleu",
                        module=metrics,
                        config=json.dumps(
                            {
                                "name": "bleu_lowercase_tokenized",
                                "lowercase": True,
                                "tokenize": "words",
                            }
                        ),
                    ),
                    tfma.MetricConfig(class_name="MaskedTokenAccuracy", module=metrics),
                ]
            )
        ],
    )


MULTI30K_TRAIN_PAIRS = 29_000  # task 1's training split


def multi30k_train_lines(folder: str) -> int:
    """Lines of the German training file (train.de, or as released, train.de.gz); 0 without."""
    for name, opener in (("train.de.gz", gzip.open), ("train.de", open)):
        path = os.path.join(folder, name)
        if os.path.isfile(path):
            with opener(path, "rb") as f:
                return sum(1 for _ in f)
    return 0


TASK = Task(
    name="translation",
    description="Translation from parallel files (<split>.<lang>, e.g. Multi30k) or TSV pairs",
    default_data_dir=str(configs.EMBEDDED_DATA_DIR / "translation"),
    example_gen=example_gen,
    model_kind=TRANSLATOR,
    default_model="translator",
    eval_config=eval_config,
    gate=GATE,
    default_train_steps=600,
    default_eval_steps=4,
    raw_feature=features.SOURCE,
    # A span whose source sentences' lengths or words moved this far from the champion's data
    # stops the run.
    drift_checks=text_drift_checks(
        features.SOURCE_WORDS, features.SOURCE_TOKENS, "source sentence"
    ),
    # The benchmark's recipe (benchmarks/translation_pipeline.py): 34 epochs of batches of 64
    # (the anchor trained 20): 42.0 lower-cased BLEU on val in 51 minutes of the Zen 5.
    default_epochs=34.0,
    recipe_preset="base",
    data_options=(
        Option("source_lang", default="de", help="the source language's file suffix (train.de)"),
        Option("target_lang", default="en", help="the target language's file suffix (train.en)"),
    ),
    purpose="sentence translation",
    examples_noun="sentences",
    targets_noun="reference translations",
    limitations=(
        "Names and rare words are spelled from subword pieces, often wrongly.",
        "Corpus BLEU measures n-gram overlap with one reference, not adequacy.",
    ),
    embedded=Corpus(
        "the project's embedded German-English sample of caption-like sentences, composed "
        "from a small grammar and word list (data/generate_translation.py)",
        intended_use="Trying the pipeline end to end: the model has learnt a small generated "
        "grammar. Not for translating real text.",
        limitations=("Generated from a small grammar: real sentences are out of distribution.",),
    ),
    corpora=(
        Corpus(
            "Multi30k task 1, German-English image captions (Elliott et al., 2016)",
            intended_use="Sentence-level machine translation of short descriptive sentences (the "
            "Multi30k image-caption domain), as a reference for sequence-to-sequence "
            "Transformers in TFX. Not for documents, or where a mistranslation matters.",
            limitations=(
                "Trained on image captions: longer, technical or conversational text is out "
                "of distribution.",
            ),
            recognises=lambda folder: multi30k_train_lines(folder) == MULTI30K_TRAIN_PAIRS,
        ),
    ),
)
