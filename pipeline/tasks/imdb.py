"""IMDB sentiment: reviews -> positive/negative; and any labelled texts -> their classes."""

from typing import Sequence

import tensorflow_model_analysis as tfma

from components.reviews_example_gen import ReviewsExampleGen
from components.reviews_example_gen.classes import detect_classes, parse_classes
from pipeline import configs
from pipeline.tasks.base import (
    Corpus,
    DriftCheck,
    Gate,
    Task,
    overall_gate,
    readme_says,
    text_drift_checks,
)
from trainer_module import features
from trainer_module.family import TEXT_CLASSIFIER, ModelFamily, Option

# Well above chance on two classes, below what a trained model reaches on both corpora.
GATE = Gate(
    "binary_accuracy",
    "accuracy, a fraction from 0 to 1",
    default=0.6,
    low=0.0,
    high=1.0,
    multiclass_metric="sparse_categorical_accuracy",
)


def example_gen(
    data_dir: str, eval_percent: int, spans: int = 1, unlabeled: bool = False, classes: str = ""
):
    """ReviewsExampleGen; `unlabeled` (a run that pretrains) reads the unlabelled texts too;
    `classes` (comma-separated, in label order) are the data's, as the pipeline read them."""
    return ReviewsExampleGen(
        data_dir,
        eval_percent=eval_percent,
        split_seed=configs.SPLIT_SEED,
        spans=spans,
        unlabeled=unlabeled,
        classes=parse_classes(classes),
    )


def eval_config(
    min_accuracy: float, family: ModelFamily, classes: Sequence[str] = features.LABEL_NAMES
) -> tfma.EvalConfig:
    """On two classes, binary metrics on P(class 1); on more, multiclass_metrics. Sliced by
    text length and rating.

    The blessing gates on accuracy over the whole eval split; the slices are reported, not
    gated (a handful of reviews with one rating must not block a model).
    """
    if len(classes) > 2:
        return _eval_config("probabilities", multiclass_metrics(min_accuracy, len(classes)))
    metric = tfma.MetricConfig
    binary = tfma.MetricsSpec(
        metrics=[
            metric(class_name="ExampleCount"),
            metric(class_name="BinaryAccuracy", per_slice_thresholds=overall_gate(min_accuracy)),
            metric(class_name="AUC"),
            metric(class_name="Precision"),
            metric(class_name="Recall"),
            metric(class_name="MeanLabel"),
            metric(class_name="MeanPrediction"),
            metric(class_name="Calibration"),
            metric(class_name="CalibrationPlot"),
        ]
    )
    return _eval_config("score", [binary])


def _eval_config(prediction_key: str, metrics_specs: list) -> tfma.EvalConfig:
    """The served model's `prediction_key` against the label, through Transform's graph,
    overall and by text length and rating."""
    return tfma.EvalConfig(
        model_specs=[
            tfma.ModelSpec(
                signature_name="serving_default",
                label_key=features.LABEL,
                prediction_key=prediction_key,
                preprocessing_function_names=["transform_features"],
            )
        ],
        slicing_specs=[
            tfma.SlicingSpec(),
            tfma.SlicingSpec(feature_keys=[features.LENGTH_BUCKET]),
            tfma.SlicingSpec(feature_keys=[features.RATING]),
        ],
        metrics_specs=metrics_specs,
    )


def multiclass_metrics(min_accuracy: float, num_classes: int) -> list:
    """Accuracy (gated), the confusion matrix, and each class's precision, recall, F1 and
    calibration (binarized by class id; the first three macro-averaged too), on the served
    probabilities."""
    metric = tfma.MetricConfig
    by_class = tfma.BinarizationOptions(class_ids={"values": list(range(num_classes))})
    return [
        tfma.MetricsSpec(
            metrics=[
                metric(class_name="ExampleCount"),
                metric(
                    class_name="SparseCategoricalAccuracy",
                    per_slice_thresholds=overall_gate(min_accuracy),
                ),
                metric(class_name="MultiClassConfusionMatrixPlot"),
            ]
        ),
        tfma.MetricsSpec(
            binarize=by_class,
            # Each class counts the same in the averages (TFMA's macro average).
            aggregate=tfma.AggregationOptions(
                macro_average=True, class_weights=dict.fromkeys(range(num_classes), 1.0)
            ),
            metrics=[
                metric(class_name="Precision"),
                metric(class_name="Recall"),
                metric(class_name="F1Score"),
            ],
        ),
        tfma.MetricsSpec(  # not averaged: TFMA aggregates no plots
            binarize=by_class, metrics=[metric(class_name="CalibrationPlot")]
        ),
    ]


TASK = Task(
    name="imdb",
    description="IMDB movie-review sentiment (aclImdb layout or text,label CSV)",
    default_data_dir=str(configs.EMBEDDED_DATA_DIR / "imdb"),
    example_gen=example_gen,
    model_kind=TEXT_CLASSIFIER,
    default_model="text_encoder",
    eval_config=eval_config,
    gate=GATE,
    default_train_steps=120,
    default_eval_steps=5,
    raw_feature=features.TEXT,
    default_epochs=2.0,  # the text encoder's measured recipe (docs/tasks/imdb.md)
    # A span whose label shares, lengths or words moved this far from the champion's data
    # stops the run.
    drift_checks=(
        DriftCheck("label", "label balance (positive and negative reviews)", threshold=0.1),
        *text_drift_checks(features.TEXT_WORDS, features.TEXT_TOKENS, "review"),
    ),
    purpose="binary sentiment (positive or negative)",
    read_classes=detect_classes,
    default_classes=features.LABEL_NAMES,
    data_options=(
        Option(
            "classes",
            default="",
            help="the class names in label order, comma-separated (default: read from the "
            "data when the pipeline is built; give them where it cannot be read then, such as "
            "gs:// data compiled on a laptop)",
        ),
    ),
    examples_noun="texts",
    limitations=(
        "Texts longer than the preset's max_length are truncated (head and tail kept); the "
        "verdict may sit in the cut part.",
    ),
    embedded=Corpus(
        "the project's embedded sample of 440 movie reviews, composed from a phrase bank "
        "(data/generate_imdb.py)",
        intended_use="Trying the pipeline end to end: the model has learnt a small generated "
        "corpus's phrases. Not for real reviews or any decision.",
        limitations=(
            "Composed from a small phrase bank: real reviews' words and style are out of "
            "distribution.",
        ),
    ),
    corpora=(
        Corpus(
            "the IMDB Large Movie Review Dataset (Maas et al., 2011)",
            intended_use="Binary sentiment (positive/negative) of English movie reviews, as a "
            "reference for training, evaluating and serving text Transformers with TFX. Not "
            "for decisions about people or for text far from movie reviews.",
            limitations=(
                "Trained on movie reviews only: other domains, languages and very short or "
                "sarcastic texts are out of distribution.",
                "Learned from IMDB users' ratings, with the biases of that audience.",
            ),
            recognises=readme_says("Large Movie Review Dataset", "aclImdb"),
        ),
    ),
)
