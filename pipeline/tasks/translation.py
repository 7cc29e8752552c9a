"""Translation: sentence pairs -> an encoder-decoder Transformer that translates raw strings."""
from typing import Optional

import tensorflow_model_analysis as tfma

from components.parallel_corpus_example_gen import ParallelCorpusExampleGen
from pipeline import configs
from pipeline.model_families import TRANSLATORS
from pipeline.tasks.base import Task, overall_gate
from pipeline.tasks.translation_metrics import BLEU_NAME
from trainer_module import features

METRICS_MODULE = "pipeline.tasks.translation_metrics"
DEFAULT_MIN_BLEU = 20.0  # the embedded corpus reaches ~98 with the default steps; chance is ~0


def example_gen(data_dir: str, source_lang: str, target_lang: str):
    return ParallelCorpusExampleGen(data_dir, source_lang, target_lang,
                                    eval_percent=configs.EVAL_PERCENT,
                                    split_seed=configs.SPLIT_SEED)


def eval_config(min_bleu: Optional[float] = None) -> tfma.EvalConfig:
    """BLEU of the served model's decoded `translation` against the tokenized `reference`, and
    teacher-forced token accuracy; overall and by source length.

    The blessing gates on BLEU over the whole eval split (value and no worse than the latest
    blessed model); slices are reported, not gated.
    """
    min_bleu = DEFAULT_MIN_BLEU if min_bleu is None else min_bleu
    return tfma.EvalConfig(
        model_specs=[tfma.ModelSpec(
            signature_name="serving_default",
            label_key=features.REFERENCE,  # a transformed feature (transform_features)
            prediction_key="translation",
            preprocessing_function_names=["transform_features"],
        )],
        slicing_specs=[tfma.SlicingSpec(),
                       tfma.SlicingSpec(feature_keys=[features.SOURCE_LENGTH_BUCKET])],
        metrics_specs=[tfma.MetricsSpec(metrics=[
            tfma.MetricConfig(class_name="ExampleCount"),
            tfma.MetricConfig(class_name="DecodedBleu", module=METRICS_MODULE,
                              per_slice_thresholds=overall_gate(min_bleu)),
            tfma.MetricConfig(class_name="MaskedTokenAccuracy", module=METRICS_MODULE),
        ])],
    )


TRANSLATION = Task(
    name="translation",
    description="Translation from parallel files (<split>.<lang>, e.g. Multi30k) or TSV pairs",
    default_data_dir=str(configs.EMBEDDED_DATA_DIR / "translation"),
    example_gen=example_gen,
    model_families=TRANSLATORS,
    eval_config=eval_config,
    gating_metric=BLEU_NAME,
    default_train_steps=600,
    default_eval_steps=4,
    data_options={"source_lang": "de", "target_lang": "en"},
    intended_use=("Sentence-level machine translation of short descriptive sentences (the "
                  "Multi30k image-caption domain), as a reference for sequence-to-sequence "
                  "Transformers in TFX. Not for documents, or where a mistranslation matters."),
    limitations=("Trained on image captions: longer, technical or conversational text is out "
                 "of distribution.",
                 "Words outside the learned vocabulary become [UNK]; names are often lost.",
                 "Corpus BLEU measures n-gram overlap with one reference, not adequacy."),
)
