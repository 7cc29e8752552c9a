"""Writes the run report into the output artifact's folder (see report.py)."""

import json
import os
from typing import Any, Dict, List

from tfx import types
from tfx.dsl.components.base import base_executor
from tfx.types import artifact_utils

from components.champion_model.executor import is_empty
from components.run_identity import run_identity
from components.run_report.artifacts import from_tfx
from components.run_report.report import REPORT_FILE, write_report

REPORT_PATH = "report_path"  # custom property of the RunReport artifact


class Executor(base_executor.BaseExecutor):
    def Do(
        self,
        input_dict: Dict[str, List[types.Artifact]],
        output_dict: Dict[str, List[types.Artifact]],
        exec_properties: Dict[str, Any],
    ) -> None:
        refs = {
            role: from_tfx(role, artifacts[0])
            for role, artifacts in input_dict.items()
            if artifacts and not is_empty(artifacts[0])  # no champion: no baseline
        }
        report = artifact_utils.get_single_instance(output_dict["report"])
        pipeline_name, run_id = run_identity(self._context, exec_properties)
        path = write_report(
            os.path.join(report.uri, REPORT_FILE),
            refs,
            pipeline_name=pipeline_name or "pipeline",
            run_id=run_id or "unknown",
            card=json.loads(exec_properties["model_card"]),
        )
        report.set_string_custom_property(REPORT_PATH, path)
