"""A family's training step at a config's shapes, on random inputs, timed on this machine: what
the cost projection uses on a CPU kind no benchmark measured (components/cost_estimate), and
what benchmarks/training_step.py times per dtype.

The step is Keras `train_on_batch` of the family's model (AdamW, cross-entropy) on one full
batch at the config's longest inputs: the run's own optimiser schedule, wide path, evaluation
passes and export are not in it.
"""

import statistics
import time
from typing import Any, Callable, List, Tuple

import numpy as np

# (the model, its inputs, labels, the loss)
Synthetic = Tuple[Any, Any, Any, Any]


def one_hot(config) -> np.ndarray:
    return np.eye(config.num_classes, dtype="float32")[
        np.arange(config.batch_size) % config.num_classes
    ]


def text_encoder_inputs(config, seed: int = 0):
    """Random inputs of one text encoder batch: token ids, and n-gram ids for the wide path."""
    rng = np.random.default_rng(seed)
    ids = rng.integers(1, config.vocab_size, size=(config.batch_size, config.max_length))
    if not config.ngram_buckets:
        return ids
    return {
        "token_ids": ids,
        "ngram_ids": rng.integers(
            1, config.ngram_buckets + 1, size=(config.batch_size, config.max_ngrams)
        ),
    }


def text_encoder(config) -> Synthetic:
    import keras

    from trainer_module.text_encoder.model import TextEncoderClassifier

    return (
        TextEncoderClassifier(config),
        text_encoder_inputs(config),
        one_hot(config),
        keras.losses.CategoricalCrossentropy(from_logits=True),
    )


def vit(config) -> Synthetic:
    import keras

    from trainer_module.vit.model import VitClassifier

    size = (config.batch_size, config.image_size, config.image_size, 3)
    images = np.random.default_rng(0).normal(size=size).astype("float32")
    return (
        VitClassifier(config),
        images,
        one_hot(config),
        keras.losses.CategoricalCrossentropy(from_logits=True),
    )


def translator(config, length: int = 0) -> Synthetic:
    """Batches of `length` tokens (default: the config's longest source)."""
    from trainer_module.training.sequence_losses import MaskedSequenceCrossEntropy
    from trainer_module.translator.model import Translator

    rng = np.random.default_rng(0)
    shape = (config.batch_size, length or config.max_source_length)
    inputs = {
        "source_ids": rng.integers(4, config.source_vocab_size, size=shape),
        "decoder_input_ids": rng.integers(4, config.target_vocab_size, size=shape),
    }
    return (
        Translator(config),
        inputs,
        rng.integers(4, config.target_vocab_size, size=shape),
        MaskedSequenceCrossEntropy(config.label_smoothing),
    )


def bert(config, backbone=None) -> Synthetic:
    """Over `backbone` (default: config.backbone_preset's, loaded), every block training, the
    wide path aside, reviews filling sequence_length."""
    import keras

    from trainer_module.bert.checkpoint import load_backbone
    from trainer_module.bert.model import BertClassifier, example_inputs

    config = config.replace(ngram_buckets=0)
    model = BertClassifier(backbone or load_backbone(config.backbone_preset), config)
    model.train_phase("full")
    inputs = example_inputs(config, config.batch_size)
    vocabulary = model.backbone.vocabulary_size
    inputs["token_ids"] = (
        np.random.default_rng(0)
        .integers(min(1000, vocabulary - 1), vocabulary, size=inputs["token_ids"].shape)
        .astype("int32")
    )
    inputs["padding_mask"][:] = 1
    return model, inputs, one_hot(config), keras.losses.CategoricalCrossentropy(from_logits=True)


SYNTHETIC: dict = {
    "text_encoder": text_encoder,
    "vit": vit,
    "translator": translator,
    "bert": bert,
}


def timed_steps(
    synthetic: Callable[[], Synthetic], policy: str = "float32", steps: int = 3, warmup: int = 2
) -> Tuple[List[float], Synthetic]:
    """The seconds of each of `steps` training steps of `synthetic()`'s model, built under the
    Keras dtype `policy` (restored after), after `warmup` steps (tracing, kernels); and what
    `synthetic()` gave."""
    import keras

    previous = keras.mixed_precision.global_policy()
    keras.mixed_precision.set_global_policy(policy)
    try:
        keras.utils.set_random_seed(0)
        model, inputs, labels, loss = built = synthetic()
        model.compile(optimizer=keras.optimizers.AdamW(1e-4), loss=loss)
        for _ in range(warmup):
            model.train_on_batch(inputs, labels)
        times = []
        for _ in range(steps):
            started = time.perf_counter()
            model.train_on_batch(inputs, labels)
            times.append(time.perf_counter() - started)
    finally:
        keras.mixed_precision.set_global_policy(previous)
    return times, built


def seconds_per_step(family: str, config, policy: str = "float32", steps: int = 3) -> float:
    """The median seconds of a training step of `family`'s model at `config`'s shapes."""
    return statistics.median(timed_steps(lambda: SYNTHETIC[family](config), policy, steps)[0])
