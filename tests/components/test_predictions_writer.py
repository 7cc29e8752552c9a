"""PredictionsWriter: a BulkInferrer PredictionLog -> the JSON line `predict` would answer."""

import numpy as np
import tensorflow as tf
from tensorflow_serving.apis import prediction_log_pb2

from components.predictions_writer.executor import prediction_row


def log(example: dict, outputs: dict) -> prediction_log_pb2.PredictionLog:
    """A PredictionLog as tfx_bsl's RunInference writes one for a predict signature."""
    features = {
        name: tf.train.Feature(bytes_list=tf.train.BytesList(value=[v.encode()]))
        for name, v in example.items()
    }
    serialized = tf.train.Example(features=tf.train.Features(feature=features)).SerializeToString()
    entry = prediction_log_pb2.PredictionLog()
    request = entry.predict_log.request.inputs["examples"]
    request.dtype = tf.string.as_datatype_enum
    request.tensor_shape.dim.add().size = 1
    request.string_val.append(serialized)
    for name, value in outputs.items():
        entry.predict_log.response.outputs[name].CopyFrom(
            tf.make_tensor_proto(np.expand_dims(value, 0))
        )
    return entry


def test_a_classifier_log_becomes_the_id_the_text_and_predicts_answer():
    row = prediction_row(
        log(
            {"id": "a.txt", "text": "Großartig"},
            {
                "label": np.int64(1),
                "label_name": np.array([b"positive"], dtype=object),
                "classes": np.array([b"negative", b"positive"], dtype=object),
                "probabilities": np.array([0.25, 0.75], np.float32),
                "score": np.float32(0.75),
            },
        ),
        "text",
    )
    assert row == {
        "id": "a.txt",
        "text": "Großartig",
        "label": "positive",
        "label_id": 1,
        "classes": ["negative", "positive"],
        "probabilities": [0.25, 0.75],
    }


def test_a_translator_log_becomes_the_source_and_its_translation():
    row = prediction_row(
        log(
            {"id": "s.txt:2", "source": "Ein Hund."},
            {
                "translation": np.array(["a dog .".encode()], dtype=object),
                "token_ids": np.array([5, 6, 2], np.int32),
            },
        ),
        "source",
    )
    assert row == {"id": "s.txt:2", "source": "Ein Hund.", "translation": "a dog ."}


def test_a_log_of_a_model_without_classes_answers_without_them():
    row = prediction_row(
        log(
            {"id": "cat.png", "image": "\x89PNG"},
            {
                "label": np.int64(0),
                "label_name": np.array([b"cat"], dtype=object),
                "probabilities": np.array([1.0], np.float32),
            },
        ),
        "image",
    )
    assert row == {"id": "cat.png", "label": "cat", "label_id": 0, "probabilities": [1.0]}


def test_an_image_log_keeps_the_id_not_the_bytes_and_names_every_class():
    row = prediction_row(
        log(
            {"id": "cat.png", "image": "\x89PNG"},
            {
                "label": np.int64(1),
                "label_name": np.array([b"cat"], dtype=object),
                "classes": np.array([b"airplane", b"cat", b"dog"], dtype=object),
                "probabilities": np.array([0.1, 0.6, 0.3], np.float32),
            },
        ),
        "image",
    )
    assert row == {
        "id": "cat.png",
        "label": "cat",
        "label_id": 1,
        "classes": ["airplane", "cat", "dog"],
        "probabilities": [0.1, 0.6, 0.3],
    }
