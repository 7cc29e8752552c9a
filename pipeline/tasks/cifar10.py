"""CIFAR-10 (or any labelled images, of any size): images -> a Vision Transformer that classifies
raw JPEG/PNG bytes."""

import os
from typing import Sequence

import tensorflow_model_analysis as tfma

from components.image_example_gen import ImageExampleGen
from pipeline import configs
from pipeline.tasks.base import Corpus, DriftCheck, Gate, Task, overall_gate
from trainer_module import features
from trainer_module.family import IMAGE_CLASSIFIER, ModelFamily

# Chance is 0.1; the embedded shapes reach 0.95 with the defaults.
GATE = Gate(
    "sparse_categorical_accuracy",
    "accuracy, a fraction from 0 to 1",
    default=0.5,
    low=0.0,
    high=1.0,
)


def example_gen(data_dir, eval_percent: int, spans: int = 1) -> ImageExampleGen:
    """ImageExampleGen: the CIFAR-10 binary release, image folders, `path,label` CSV files or
    TFRecords of tf.Example (already `image`, `label`, `label_name`), found when it runs."""
    return ImageExampleGen(
        data_dir,
        eval_percent=eval_percent,
        split_seed=configs.SPLIT_SEED,
        spans=spans,
    )


def eval_config(
    min_accuracy: float, family: ModelFamily, classes: Sequence[str] = ()
) -> tfma.EvalConfig:
    """Accuracy, top-3 accuracy and the confusion matrix, overall and per class (label_name).

    The blessing gates on accuracy over the whole eval split (value, and no worse than the
    latest blessed model); per-class slices are reported, not gated.
    """
    metric = tfma.MetricConfig
    return tfma.EvalConfig(
        model_specs=[
            tfma.ModelSpec(
                signature_name="serving_default",
                label_key=features.IMAGE_LABEL,
                prediction_key="probabilities",
            )
        ],
        slicing_specs=[
            tfma.SlicingSpec(),
            tfma.SlicingSpec(feature_keys=[features.IMAGE_LABEL_NAME]),
        ],
        metrics_specs=[
            tfma.MetricsSpec(
                metrics=[
                    metric(class_name="ExampleCount"),
                    metric(
                        class_name="SparseCategoricalAccuracy",
                        per_slice_thresholds=overall_gate(min_accuracy),
                    ),
                    metric(class_name="SparseTopKCategoricalAccuracy", config='"k": 3'),
                    metric(class_name="MultiClassConfusionMatrixPlot"),
                ]
            )
        ],
    )


CIFAR10_CLASSES = (
    "airplane automobile bird cat deer dog frog horse ship truck".split()
)  # in label order


def is_cifar10(folder: str) -> bool:
    """The binary or Python release (its batches.meta), or image folders named after exactly
    CIFAR-10's classes (train/<class>/ or <class>/)."""
    for release, meta in (
        ("cifar-10-batches-bin", "batches.meta.txt"),
        ("cifar-10-batches-py", "batches.meta"),
    ):
        if any(os.path.isfile(os.path.join(folder, *where, meta)) for where in ((release,), ())):
            return True
    for classes in (os.path.join(folder, "train"), folder):
        if os.path.isdir(classes) and sorted(os.listdir(classes)) == sorted(CIFAR10_CLASSES):
            return True
    return False


TASK = Task(
    name="cifar10",
    description="Image classification: the CIFAR-10 binary release, image folders or TFRecords",
    default_data_dir=str(configs.EMBEDDED_DATA_DIR / "shapes"),
    example_gen=example_gen,
    model_kind=IMAGE_CLASSIFIER,
    default_model="vit",
    eval_percent=10,  # CIFAR-10's 50,000 training images -> 45,000 train / 5,000 validation
    eval_config=eval_config,
    gate=GATE,
    default_train_steps=500,
    default_eval_steps=3,
    raw_feature=features.IMAGE,
    # The benchmark's recipe (benchmarks/cifar10_pipeline.py): 25 epochs of the ViT hybrid
    # trained with airbench's recipe (about 0.5 PFLOP), inside issue 45's 30 minutes on 2
    # AVX512-BF16 cores in mixed bfloat16.
    default_epochs=25.0,
    recipe_preset="hybrid_airbench",
    # A span whose label shares moved this far from the champion's data stops the run.
    drift_checks=(DriftCheck("label", "label balance (images per class)", threshold=0.1),),
    purpose="image classification into the data's classes",
    examples_noun="images",
    limitations=(
        "Every image is resized (squashed, not cropped) to the model's square image_size; "
        "photos unlike the training set's "
        "(other classes, framing, resolution) get confident wrong answers.",
        "Every image is assigned one of the known classes; there is no 'none' class.",
        "Accuracy differs per class: see the label_name slices.",
    ),
    embedded=Corpus(
        "the project's embedded sample of ten classes of drawn shapes at 32x32 "
        "(data/generate_shapes.py)",
        intended_use="Trying the pipeline end to end: the model tells drawn shapes apart. Not "
        "for photographs or any decision.",
    ),
    corpora=(
        Corpus(
            "CIFAR-10 (Krizhevsky, 2009)",
            intended_use="Classifying small natural images into CIFAR-10's 10 object classes "
            "at 32x32, as a reference for Vision Transformers in TFX. Not for "
            "safety-relevant recognition.",
            recognises=is_cifar10,
        ),
    ),
)
