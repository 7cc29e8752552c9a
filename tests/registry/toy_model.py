"""A tiny SavedModel with the text classifier's raw-input signature, written in a second: the
registry tests need real SavedModels (each version is packaged as an MLflow Model), not the
minutes a trained one costs. `bias` makes each one a different model (its own fingerprint)."""

import tensorflow as tf

LABEL_NAMES = ("negative", "positive")


class ToyClassifier(tf.Module):
    """P(positive) rises with the number of words: exact outputs the tests can compute."""

    def __init__(self, bias: float):
        super().__init__()
        self.bias = tf.Variable(bias)

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="text")])
    def classify_text(self, text):
        words = tf.cast(tf.strings.split(text).row_lengths(), tf.float32)
        score = tf.sigmoid(words - 3.0 + self.bias)
        probabilities = tf.stack([1.0 - score, score], axis=-1)
        label = tf.argmax(probabilities, axis=-1)
        return {
            "probabilities": probabilities,
            "label": label,
            "label_name": tf.gather(tf.constant(LABEL_NAMES), label),
        }


def write_toy_model(path, bias: float = 0.0) -> str:
    module = ToyClassifier(bias)
    tf.saved_model.save(module, str(path), signatures={"classify_text": module.classify_text})
    return str(path)
