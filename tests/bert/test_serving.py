"""The BERT export (from the session's real fine-tuning run on a tiny local preset:
tests/conftest.py)."""

import numpy as np
import tensorflow as tf

from trainer_module.bert.serving import bert_inputs


def test_exported_bert_classifies_raw_text_as_the_keras_model_does(bert_run):
    loaded = tf.saved_model.load(bert_run.export_dir)
    assert set(loaded.signatures) >= {"serving_default", "classify_text", "transform_features"}
    texts = ["Loved it!", "dull <br />plot"]
    served = loaded.signatures["classify_text"](text=tf.constant(texts))
    # The same probabilities as the model on tf.Transform's packing of the same strings.
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
    assert int(bert_run.model.optimizer.iterations.numpy()) == 9
    assert bert_run.model.backbone.trainable
    for phase in ("head", "full"):  # each phase's TensorBoard logs
        assert os.path.isdir(os.path.join(bert_run.fn_args.model_run_dir, phase))
