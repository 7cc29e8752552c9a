"""The text encoder's export (from the session's real training run: tests/conftest.py)."""

import numpy as np
import tensorflow as tf

from trainer_module.text_encoder.preprocessing import VOCABULARY_NAME
from trainer_module.text_encoder.serving import model_inputs


def serialized_example(text: str, label: int = None) -> bytes:
    feature = {"text": tf.train.Feature(bytes_list=tf.train.BytesList(value=[text.encode()]))}
    if label is not None:
        feature["label"] = tf.train.Feature(int64_list=tf.train.Int64List(value=[label]))
    return tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString()


def test_exported_model_classifies_raw_text_as_the_keras_model_does(text_encoder_run):
    model, output = text_encoder_run.model, text_encoder_run.output
    loaded = tf.saved_model.load(text_encoder_run.export_dir)
    assert {"serving_default", "classify_text", "transform_features", "attention"} <= set(
        loaded.signatures
    )

    texts = ["Great fun!", "awful, DULL plot", "zebra quokka"]
    raw = loaded.signatures["classify_text"](text=tf.constant(texts))
    probabilities = raw["probabilities"].numpy()
    assert probabilities.shape == (3, 2) and raw["probabilities"].dtype == tf.float32
    np.testing.assert_allclose(probabilities.sum(axis=1), 1.0, rtol=1e-5)
    np.testing.assert_allclose(raw["score"].numpy(), probabilities[:, 1], rtol=1e-6)
    assert raw["label"].numpy().tolist() == probabilities.argmax(axis=1).tolist()
    names = ["negative", "positive"]
    assert [n.decode() for n in raw["label_name"].numpy()] == [
        names[i] for i in probabilities.argmax(axis=1)
    ]
    assert raw["classes"].numpy().astype(str).tolist() == [names] * 3

    # Tokenisation happens inside the graph: the same ids as the transform, the same logits.
    transformed = loaded.signatures["transform_features"](
        examples=tf.constant([serialized_example(t, 0) for t in texts])
    )
    ids = transformed["token_ids"].numpy()
    vocabulary = [w.decode() for w in output.vocabulary_by_name(VOCABULARY_NAME)]
    oov = len(vocabulary) + 1
    assert ids[2].tolist() == [oov, oov] + [0] * 10  # two unseen words, then padding
    assert ids[0][:2].tolist() == [vocabulary.index("great") + 1, vocabulary.index("fun") + 1]
    # The Keras model as Keras runs it, in a graph: in mixed bfloat16 an eager call rounds
    # between ops that the graph fuses (its Dense matmul and bias), by about 1e-3.
    graph = tf.function(lambda inputs: model(inputs, training=False))
    expected = tf.nn.softmax(graph(model_inputs(transformed))).numpy()
    np.testing.assert_allclose(probabilities, expected, rtol=1e-5, atol=1e-6)

    # serving_default takes tf.Examples without a label and answers the same.
    from_examples = loaded.signatures["serving_default"](
        examples=tf.constant([serialized_example(t) for t in texts])
    )
    np.testing.assert_allclose(from_examples["probabilities"].numpy(), probabilities, rtol=1e-6)

    # classify_transformed: the model alone, on Transform's outputs (what ONNX converters
    # take: benchmarks/int8_serving.py), answers the same.
    model_part = loaded.signatures["classify_transformed"]
    assert set(model_part.structured_input_signature[1]) == set(transformed) - {"label"}
    alone = model_part(**{k: v for k, v in transformed.items() if k != "label"})
    np.testing.assert_allclose(alone["probabilities"].numpy(), probabilities, rtol=1e-6)
    assert alone["label"].numpy().tolist() == raw["label"].numpy().tolist()


def test_attention_signature_returns_each_layers_weights_over_the_tokens(text_encoder_run):
    model = text_encoder_run.model
    loaded = tf.saved_model.load(text_encoder_run.export_dir)
    result = loaded.signatures["attention"](text=tf.constant(["Great fun zebra", "dull cast"]))
    tokens = result["tokens"].numpy().astype(str).tolist()
    # [CLS], the words (out-of-vocabulary as [UNK]), then padding: 12 ids + [CLS].
    assert tokens[0] == ["[CLS]", "great", "fun", "[UNK]"] + ["[PAD]"] * 9
    assert tokens[1][:3] == ["[CLS]", "dull", "cast"]
    assert result["token_mask"].numpy()[0].tolist() == [True] * 4 + [False] * 9
    weights = result["attention"].numpy()
    assert weights.shape == (2, 2, 2, 13, 13)  # (batch, layers, heads, queries, keys)
    np.testing.assert_allclose(weights.sum(axis=-1), 1.0, rtol=1e-5)
    assert np.all(weights[0, :, :, :, 4:] < 1e-6)  # padding gets no attention
    # The same weights as the Keras model computes.
    ids = loaded.signatures["transform_features"](
        examples=tf.constant([serialized_example("Great fun zebra", 0)])
    )["token_ids"]
    _, _, expected = tf.function(lambda ids: model.encode(ids, training=False))(ids)  # a graph
    np.testing.assert_allclose(weights[0, 1], np.asarray(expected[1])[0], rtol=1e-5, atol=1e-6)
