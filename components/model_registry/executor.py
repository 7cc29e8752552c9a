"""Registers the pushed model version (see component.py); records where in the output."""

from typing import Any, Dict, List

from absl import logging
from tfx import types
from tfx.dsl.components.base import base_executor
from tfx.types import artifact_utils

from components.evaluation_results import overall_metrics
from components.model_registry.backends import from_config
from components.model_registry.version import (
    ModelVersion,
    saved_model_fingerprint,
    serving_runtime,
)
from components.run_identity import run_identity

LINEAGE_INPUTS = ("examples", "transform_graph", "model", "evaluation", "blessing", "pushed_model")


class Executor(base_executor.BaseExecutor):
    def Do(
        self,
        input_dict: Dict[str, List[types.Artifact]],
        output_dict: Dict[str, List[types.Artifact]],
        exec_properties: Dict[str, Any],
    ) -> None:
        single = {
            key: artifact_utils.get_single_instance(value)
            for key, value in input_dict.items()
            if value
        }
        output = artifact_utils.get_single_instance(output_dict["registered_model"])
        pushed = single["pushed_model"]
        if not pushed.get_int_custom_property("pushed"):
            logging.info("The model was not pushed (not blessed): nothing to register.")
            output.set_int_custom_property("registered", 0)
            return
        pipeline_name, run_id = run_identity(self._context, exec_properties)
        source = pushed.get_string_custom_property("pushed_destination")
        version = ModelVersion(
            name=pipeline_name or "model",
            source=source,
            blessed=bool(single["blessing"].get_int_custom_property("blessed")),
            metrics=overall_metrics(single["evaluation"].uri),
            pipeline_name=pipeline_name,
            run_id=run_id,
            pushed_version=pushed.get_string_custom_property("pushed_version"),
            lineage={key: single[key].id for key in LINEAGE_INPUTS if key in single},
            fingerprint=saved_model_fingerprint(source),
            serving_runtime=serving_runtime(source),
        )
        registered = from_config(exec_properties["registry"]).register(version)
        logging.info(
            "Registered %s version %s in %s (%s)",
            registered.name,
            registered.version,
            registered.registry,
            registered.uri,
        )
        output.set_int_custom_property("registered", 1)
        for name in ("registry", "name", "version", "uri", "alias"):
            output.set_string_custom_property(name, getattr(registered, name) or "")
