"""The BERT export (from the session's real fine-tuning run on a tiny local preset:
tests/conftest.py)."""

import numpy as np
import tensorflow as tf

from trainer_module.bert.serving import bert_inputs, trim_padding


def test_exported_bert_classifies_raw_text_as_the_keras_model_does(bert_run):
    loaded = tf.saved_model.load(bert_run.export_dir)
    assert set(loaded.signatures) >= {"serving_default", "classify_text", "transform_features"}
    texts = ["Loved it!", "dull <br />plot"]
    served = loaded.signatures["classify_text"](text=tf.constant(texts))
    # The same probabilities as the model on tf.Transform's packing of the same strings, padded
    # to the full 16 pieces (the export cuts a request's padding: trim_padding).
    transformed = bert_run.output.transform_features_layer()({"text": tf.constant(texts)})
    expected = tf.nn.softmax(bert_run.model(bert_inputs(transformed), training=False)).numpy()
    np.testing.assert_allclose(served["probabilities"].numpy(), expected, rtol=1e-5, atol=1e-6)
    assert transformed["token_ids"].shape == (2, 16)  # the run's sequence_length


def test_fine_tuning_ran_both_phases(bert_run):
    import json
    import os

    history = json.load(open(os.path.join(bert_run.fn_args.model_run_dir, "history.json")))
    assert history["config"]["sequence_length"] == 16
    # 10 steps: the head alone for 10% (1 step), then everything with a fresh optimizer (9).
    assert int(bert_run.trained.optimizer.iterations.numpy()) == 9
    assert bert_run.model.backbone.trainable
    for phase in ("head", "full"):  # each phase's TensorBoard logs
        assert os.path.isdir(os.path.join(bert_run.fn_args.model_run_dir, phase))


def test_trimming_cuts_only_padding_past_the_longest_review_rounded_up():
    mask = tf.constant([[1, 1, 1, 0, 0, 0, 0, 0], [1, 1, 1, 1, 1, 0, 0, 0]])
    inputs = {
        "token_ids": mask * 7,
        "segment_ids": mask * 0,
        "padding_mask": mask,
        "ngram_ids": tf.ones((2, 5), tf.int32),
    }
    trimmed = trim_padding(inputs, 3)  # the longest has 5 pieces: 6 kept
    assert {key: tuple(value.shape) for key, value in trimmed.items()} == {
        "token_ids": (2, 6),
        "segment_ids": (2, 6),
        "padding_mask": (2, 6),
        "ngram_ids": (2, 5),
    }
    np.testing.assert_array_equal(trimmed["token_ids"], inputs["token_ids"][:, :6])
    assert trim_padding(inputs, 16)["token_ids"].shape == (2, 8)  # never past the full length
    assert trim_padding(inputs, 0) is inputs


def test_the_run_trained_on_length_grouped_batches_and_recorded_their_lengths(bert_run):
    import json
    import os

    history = json.load(open(os.path.join(bert_run.fn_args.model_run_dir, "history.json")))
    lengths = {int(k): v for k, v in history["padded_lengths"].items()}
    assert set(lengths) <= {4, 8, 12, 16} and len(lengths) > 1
    assert abs(sum(lengths.values()) - 1) < 1e-3
