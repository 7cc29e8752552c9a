"""The translator's Trainer entry point, run for real, and its input pipeline and loss."""

import json
import math
import os

import numpy as np
import tensorflow as tf

from tests.family_util import write_examples
from trainer_module.training.sequence_losses import MaskedSequenceCrossEntropy
from trainer_module.translator.preprocessing import vocabulary_sizes
from trainer_module.translator.training import (
    BATCH_LENGTH_BOUNDARIES,
    make_dataset,
    trim_to_longest,
)


def test_run_fn_trains_the_steps_with_the_vocabularies_transform_kept(translator_run):
    model, fn_args = translator_run.model, translator_run.fn_args
    assert int(model.optimizer.iterations.numpy()) == fn_args.train_steps == 300
    sizes = vocabulary_sizes(translator_run.output)
    assert (model.config.source_vocab_size, model.config.target_vocab_size) == (
        sizes["source_vocab_size"],
        sizes["target_vocab_size"],
    )
    # Every target word and the reserved ids get an output row; nothing more.
    assert model.target_embedding.embedding.input_dim == sizes["target_vocab_size"] + 4
    # The run's one vocabulary for both languages: one size, one embedding.
    assert sizes["source_vocab_size"] == sizes["target_vocab_size"]
    assert model.source_embedding is model.target_embedding
    history = json.load(open(os.path.join(fn_args.model_run_dir, "history.json")))
    assert history["history"]["val_token_accuracy"][-1] == 1.0  # overfitted on purpose
    assert history["train_steps"] == 300 and history["fit_seconds"] > 0


def test_batches_are_trimmed_to_their_longest_sentence_rounded_to_four():
    ids = tf.constant([[5, 6, 7, 0, 0, 0, 0, 0, 0, 0], [5, 0, 0, 0, 0, 0, 0, 0, 0, 0]])
    longer_target = tf.constant([[5, 6, 7, 8, 9, 3, 0, 0, 0, 0], [5, 3, 0, 0, 0, 0, 0, 0, 0, 0]])
    trimmed, target = trim_to_longest(ids, longer_target)
    assert trimmed.shape == (2, 8) and target.shape == (2, 8)  # 6 tokens -> 8
    assert trimmed.numpy()[0].tolist() == [5, 6, 7, 0, 0, 0, 0, 0]


def test_training_batches_are_bucketed_by_length_and_trimmed(translator_run, tmp_path):
    """Sentences of 1 to 12 tokens: every training batch holds one length bucket (below 8,
    8 to 11 ...), trimmed to its longest sentence rounded up to 4 (at most the padded 12)."""
    transformed = translator_run.transformed
    rows = []
    for length in range(1, 13):
        for _ in range(4):
            row = dict(transformed[0])
            row["source_ids"] = np.array([7] * length + [0] * (12 - length))
            words = [8] * (length - 1)
            row["decoder_input_ids"] = np.array([2] + words + [0] * (12 - length))
            row["target_ids"] = np.array(words + [3] + [0] * (12 - length))
            rows.append(row)
    path = write_examples(rows, translator_run.output, str(tmp_path / "lengths.tfrecord"))
    dataset = make_dataset(
        translator_run.fn_args, [path], translator_run.output, batch_size=4, shuffle=True
    )
    widths = set()
    for inputs, targets in dataset.take(10):
        lengths = (inputs["source_ids"].numpy() != 0).sum(axis=1)
        buckets = np.searchsorted(BATCH_LENGTH_BOUNDARIES, lengths, side="right")
        assert len(set(buckets)) == 1, lengths
        width = inputs["source_ids"].shape[1]
        assert width == min(12, math.ceil(lengths.max() / 4) * 4), (lengths, width)
        assert inputs["decoder_input_ids"].shape[1] == targets.shape[1] == width
        widths.add(width)
    assert 12 in widths and widths & {4, 8}


def test_validation_batches_have_no_autotuning_thread(translator_run, tmp_path):
    """Keras drops the validation iterator after each evaluation, and dropping one waits for its
    autotuning thread's sleep (inputs.without_autotuning); training keeps autotuning."""
    rows = [translator_run.transformed[i % len(translator_run.transformed)] for i in range(10)]
    path = write_examples(rows, translator_run.output, str(tmp_path / "val.tfrecord"))
    args = (translator_run.fn_args, [path], translator_run.output)
    validation = make_dataset(*args, batch_size=4, shuffle=False)
    assert validation.options().autotune.enabled is False
    assert len(list(validation.take(6))) == 6  # more than the 10 rows: repeated
    training = make_dataset(*args, batch_size=4, shuffle=True)
    assert training.options().autotune.enabled is not False


def test_label_smoothed_loss_matches_a_hand_computed_value():
    logits = np.log(
        np.array([[[0.7, 0.2, 0.1], [0.1, 0.1, 0.8], [1 / 3, 1 / 3, 1 / 3]]], dtype="float32")
    )
    labels = np.array([[1, 2, 0]])  # the third position is padding
    smoothing = 0.1
    # Per real token: (1 - e) * -log p(y) + e * mean_k -log p(k); padding does not count.
    first = (1 - smoothing) * -math.log(0.2) + smoothing * -np.mean(np.log([0.7, 0.2, 0.1]))
    second = (1 - smoothing) * -math.log(0.8) + smoothing * -np.mean(np.log([0.1, 0.1, 0.8]))
    loss = MaskedSequenceCrossEntropy(smoothing)(labels, logits)
    np.testing.assert_allclose(float(loss), (first + second) / 2, rtol=1e-5)


def test_the_smoothed_loss_gradient_is_softmax_minus_the_smoothed_target():
    """smoothed_cross_entropy's hand-written gradient against the definition p - q, padding
    positions included (their upstream gradient is zero)."""
    import tensorflow as tf

    from trainer_module.training.sequence_losses import smoothed_cross_entropy

    rng = np.random.default_rng(0)
    logits = tf.constant(rng.normal(size=(2, 4, 7)) * 3, tf.float32)
    labels = np.array([[1, 6, 0, 0], [3, 3, 2, 0]])
    smoothing, weights = 0.2, rng.uniform(size=(2, 4)).astype("float32")
    with tf.GradientTape() as tape:
        tape.watch(logits)
        loss = tf.reduce_sum(
            smoothed_cross_entropy(logits, tf.constant(labels), smoothing) * weights
        )
    p = tf.nn.softmax(logits).numpy()
    q = (1 - smoothing) * np.eye(7)[labels] + smoothing / 7
    np.testing.assert_allclose(
        tape.gradient(loss, logits).numpy(), (p - q) * weights[..., None], atol=1e-6
    )
    expected = -(q * np.log(p)).sum(-1)
    np.testing.assert_allclose(float(loss), (expected * weights).sum(), rtol=1e-5)
