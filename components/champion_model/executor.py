"""Finds the champion and copies its SavedModel into the output Model artifact."""

import os
from typing import Any, Dict, List, Optional, Tuple

from absl import logging
from tfx import types
from tfx.dsl.components.base import base_executor
from tfx.dsl.io import fileio
from tfx.types import artifact_utils
from tfx.utils import io_utils, path_utils

FOUND = "champion_found"  # int custom property: 1 when the artifact holds a model
SOURCE = "champion_source"  # where the SavedModel was copied from
VERSION = "champion_version"  # its registry version, or its pushed version folder


def is_empty(artifact: types.Artifact) -> bool:
    """Whether `artifact` is a ChampionModel output that holds no model."""
    return artifact.has_custom_property(FOUND) and not artifact.get_int_custom_property(FOUND)


def newest_pushed(serving_model_dir: str) -> Optional[Tuple[str, str]]:
    """(version, path) of the newest version the Pusher published under
    `serving_model_dir`, or None."""
    from components.versioned_pusher.executor import existing_versions

    versions = existing_versions(serving_model_dir)
    if not versions:
        return None
    return str(versions[-1]), os.path.join(serving_model_dir, str(versions[-1]))


def find_champion(
    model_name: str, registry: Optional[str], serving_model_dir: str
) -> Optional[Tuple[str, str]]:
    """(version, SavedModel path) of the champion: the registry's alias holder when a registry
    is configured (None when it has no such model or alias yet), else the newest pushed
    version."""
    if not registry:
        return newest_pushed(serving_model_dir)
    from components.model_registry.backends import from_config

    return from_config(registry).champion(model_name)


class Executor(base_executor.BaseExecutor):
    def Do(
        self,
        input_dict: Dict[str, List[types.Artifact]],
        output_dict: Dict[str, List[types.Artifact]],
        exec_properties: Dict[str, Any],
    ) -> None:
        output = artifact_utils.get_single_instance(output_dict["model"])
        name = exec_properties["model_name"]
        found = find_champion(
            name, exec_properties.get("registry"), exec_properties["serving_model_dir"]
        )
        if found is None or not fileio.exists(os.path.join(found[1], "saved_model.pb")):
            logging.info("No champion of %s yet: the Evaluator runs without a baseline", name)
            output.set_int_custom_property(FOUND, 0)
            return
        version, source = found
        io_utils.copy_dir(source, path_utils.serving_model_dir(output.uri))
        logging.info("The champion of %s is version %s (%s)", name, version, source)
        output.set_int_custom_property(FOUND, 1)
        output.set_string_custom_property(SOURCE, source)
        output.set_string_custom_property(VERSION, version)
