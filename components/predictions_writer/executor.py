"""Reads BulkInferrer's PredictionLogs inside Beam and writes them as JSON lines."""

import json
import os
from typing import Any, Dict, List

import apache_beam as beam
import tensorflow as tf
from tensorflow_serving.apis import prediction_log_pb2
from tfx import types
from tfx.dsl.components.base import base_beam_executor
from tfx.types import artifact_utils

from trainer_module import features
from trainer_module.serving.contract import answer

PREDICTION_LOGS = "prediction_logs-*.gz"  # what BulkInferrer writes in its InferenceResult
FILE_PREFIX, FILE_SUFFIX = "predictions", ".jsonl"
COUNTER = "predictions"
COUNT_PROPERTY = "predictions"  # on the Predictions artifact: the lines written


def prediction_row(log: prediction_log_pb2.PredictionLog, feature: str) -> dict:
    """{"id", <feature> (texts only), <the answer>} of one PredictionLog of a predict
    signature (one input; every output with a leading dimension of 1, a string output of one
    value per input [1, 1]: trainer_module/serving/archive.py; `classes` [1, C])."""
    predict = log.predict_log
    (request,) = predict.request.inputs.values()
    example = tf.train.Example.FromString(request.string_val[0]).features.feature
    row = {"id": example[features.EXAMPLE_ID].bytes_list.value[0].decode("utf-8")}
    if feature != features.IMAGE:
        row[feature] = example[feature].bytes_list.value[0].decode("utf-8")
    outputs = {}
    for name, tensor in predict.response.outputs.items():
        value = tf.make_ndarray(tensor)[0]
        outputs[name] = value[0] if value.dtype == object and value.shape == (1,) else value
    return {**row, **answer(outputs)}


class Executor(base_beam_executor.BaseBeamExecutor):
    def Do(
        self,
        input_dict: Dict[str, List[types.Artifact]],
        output_dict: Dict[str, List[types.Artifact]],
        exec_properties: Dict[str, Any],
    ) -> None:
        result = artifact_utils.get_single_uri(input_dict["inference_result"])
        predictions = artifact_utils.get_single_instance(output_dict["predictions"])
        pipeline = self._make_beam_pipeline()
        _ = (
            pipeline
            | "ReadLogs"
            >> beam.io.ReadFromTFRecord(
                os.path.join(result, PREDICTION_LOGS),
                coder=beam.coders.ProtoCoder(prediction_log_pb2.PredictionLog),
            )
            | "ToJson" >> beam.Map(_json_line, exec_properties["feature"])
            | "Write"
            >> beam.io.WriteToText(
                os.path.join(predictions.uri, FILE_PREFIX), file_name_suffix=FILE_SUFFIX
            )
        )
        run = pipeline.run()
        run.wait_until_finish()
        counted = run.metrics().query(beam.metrics.MetricsFilter().with_name(COUNTER))
        predictions.set_int_custom_property(
            COUNT_PROPERTY, sum(c.committed or 0 for c in counted["counters"])
        )


def _json_line(log: prediction_log_pb2.PredictionLog, feature: str) -> str:
    beam.metrics.Metrics.counter(__name__, COUNTER).inc()
    return json.dumps(prediction_row(log, feature), ensure_ascii=False)
