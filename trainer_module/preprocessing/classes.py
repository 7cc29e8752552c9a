"""The classes of a classifier's data, as Transform records them: a vocabulary of
"<label>:<label_name>" pairs over the training split, which the Trainer reads back in label
order (class_names) for the model's head and the export's label names."""

from typing import List, Optional

import tensorflow as tf
import tensorflow_transform as tft

from trainer_module import features
from trainer_module.preprocessing.text import as_vector

CLASS_VOCABULARY = "class_names"  # tf.Transform vocabulary of "<label>:<label_name>" entries


def class_vocabulary(labels: tf.Tensor, label_names: tf.Tensor) -> None:
    """Writes the vocabulary of "<label>:<label_name>" pairs of the labelled examples (a label
    below 0, a text without one, is left out; a label with two names is caught by
    class_names)."""
    labels, label_names = tf.reshape(labels, [-1]), tf.reshape(label_names, [-1])
    labelled = labels >= 0
    pairs = tf.strings.join(
        [
            tf.strings.as_string(tf.boolean_mask(labels, labelled)),
            ":",
            tf.boolean_mask(label_names, labelled),
        ]
    )
    tft.vocabulary(pairs, vocab_filename=CLASS_VOCABULARY)


def class_names(tf_transform_output: tft.TFTransformOutput) -> List[str]:
    """The class names by label, from the vocabulary Transform wrote; raises if a label has two
    names or a label between 0 and the largest is missing."""
    names: dict[int, str] = {}
    for entry in tf_transform_output.vocabulary_by_name(CLASS_VOCABULARY):
        label, name = entry.decode("utf-8").split(":", 1)
        if names.setdefault(int(label), name) != name:
            raise ValueError(f"label {label} has two names: {names[int(label)]!r} and {name!r}")
    if not names:
        raise ValueError("the training split holds no labelled examples")
    missing = sorted(set(range(max(names) + 1)) - set(names))
    if missing:
        raise ValueError(f"no training examples for labels {missing} (classes {names})")
    return [names[label] for label in range(len(names))]


def recorded_class_names(tf_transform_output: tft.TFTransformOutput) -> Optional[List[str]]:
    """class_names, or None when Transform recorded none (data read without `label_name`, by a
    curated schema or an ExampleGen of before the classes were recorded)."""
    if tf_transform_output.vocabulary_file_by_name(CLASS_VOCABULARY) is None:
        return None
    return class_names(tf_transform_output)


def record_classes(inputs, labels: Optional[tf.Tensor]) -> None:
    """A text family's preprocessing_fn: class_vocabulary of its `labels` when the raw data
    names its classes (`label_name`, the reviews ExampleGen's)."""
    if labels is not None and features.LABEL_NAME in inputs:
        class_vocabulary(labels, as_vector(inputs[features.LABEL_NAME]))
