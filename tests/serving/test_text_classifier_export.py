import numpy as np
import tensorflow as tf

from tests.tft_util import tiny_text_classifier
from trainer_module.preprocessing.text import embedding_rows
from trainer_module.serving.text_classifier import export_text_classifier


def serialized_example(text: str, label: int = None) -> bytes:
    feature = {"text": tf.train.Feature(bytes_list=tf.train.BytesList(value=[text.encode()]))}
    if label is not None:
        feature["label"] = tf.train.Feature(int64_list=tf.train.Int64List(value=[label]))
    return tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString()


def test_exported_model_classifies_raw_text_with_plain_tensorflow(tmp_path):
    model, output = tiny_text_classifier(tmp_path / "transform")
    export_dir = str(tmp_path / "export")
    export_text_classifier(model, output, export_dir)

    loaded = tf.saved_model.load(export_dir)
    assert {"serving_default", "classify_text", "transform_features"} <= set(loaded.signatures)

    texts = ["Great fun!", "awful, DULL plot", "never seen words"]
    raw = loaded.signatures["classify_text"](text=tf.constant(texts))
    probabilities = raw["probabilities"].numpy()
    assert probabilities.shape == (3, 2)
    np.testing.assert_allclose(probabilities.sum(axis=1), 1.0, rtol=1e-5)
    np.testing.assert_allclose(raw["score"].numpy(), probabilities[:, 1], rtol=1e-6)
    assert raw["label"].numpy().tolist() == probabilities.argmax(axis=1).tolist()
    assert set(raw["label_name"].numpy()) <= {b"negative", b"positive"}

    # Tokenisation happens inside the graph: the same ids as the transform, the same logits.
    transformed = loaded.signatures["transform_features"](
        examples=tf.constant([serialized_example(t, 0) for t in texts]))
    ids = transformed["token_ids"].numpy()
    assert ids[0].tolist()[:3] == [output.vocabulary_by_name("text_vocabulary").index(b"great") + 1,
                                  output.vocabulary_by_name("text_vocabulary").index(b"fun") + 1,
                                  embedding_rows(output) - 1]  # "!" is out of vocabulary
    expected = tf.nn.softmax(model(ids, training=False)).numpy()
    np.testing.assert_allclose(probabilities, expected, rtol=1e-5, atol=1e-6)

    # serving_default takes tf.Examples without a label and answers the same.
    from_examples = loaded.signatures["serving_default"](
        examples=tf.constant([serialized_example(t) for t in texts]))
    np.testing.assert_allclose(from_examples["probabilities"].numpy(), probabilities, rtol=1e-6)


def test_attention_signature_returns_each_layers_weights_over_the_tokens(tmp_path):
    model, output = tiny_text_classifier(tmp_path / "transform", num_layers=2, pooling="cls")
    export_dir = str(tmp_path / "export")
    export_text_classifier(model, output, export_dir)

    loaded = tf.saved_model.load(export_dir)
    result = loaded.signatures["attention"](text=tf.constant(["Great fun!", "dull plot"]))
    tokens = result["tokens"].numpy().astype(str).tolist()
    # [CLS], the words (out-of-vocabulary as [UNK]), then padding.
    assert tokens[0] == ["[CLS]", "great", "fun", "[UNK]", "[PAD]", "[PAD]", "[PAD]"]
    assert tokens[1][:3] == ["[CLS]", "dull", "plot"]
    assert result["token_mask"].numpy()[0].tolist() == [True] * 4 + [False] * 3
    weights = result["attention"].numpy()
    assert weights.shape == (2, 2, 2, 7, 7)  # (batch, layers, heads, queries, keys)
    np.testing.assert_allclose(weights.sum(axis=-1), 1.0, rtol=1e-5)
    assert np.all(weights[0, :, :, :, 4:] < 1e-6)  # padding gets no attention
    # The same weights as the Keras model computes.
    ids = loaded.signatures["transform_features"](
        examples=tf.constant([serialized_example("Great fun!", 0)]))["token_ids"]
    _, _, expected = model.encode(ids, training=False)
    np.testing.assert_allclose(weights[0, 1], np.asarray(expected[1])[0], rtol=1e-5, atol=1e-6)
