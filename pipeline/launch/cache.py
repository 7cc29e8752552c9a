"""The cache and the artifacts a launch records (store.py keeps them on disk): the outputs a
task is given before it runs, the cache key Vertex AI would compute for it and what a hit
answers instead of running it, and what a resolver task finds among the recorded artifacts."""

import hashlib
import json
import re
from typing import Dict, List, Optional

from pipeline.launch import filters
from pipeline.launch.job import CompiledJob
from pipeline.launch.shapes import schema_title
from pipeline.launch.store import Store

INPUT_METADATA = re.compile(
    r"\{\{\$\.inputs\.artifacts\['(?P<key>[^']+)'\]\.metadata\['(?P<field>[^']+)'\]\}\}"
)


class TaskCache:
    """`job`'s artifacts and executions in `store`. `enable_cache`: None keeps each task's
    compiled caching, as `submit` does; True or False overrides every task's."""

    def __init__(self, store: Store, job: CompiledJob, enable_cache: Optional[bool] = None):
        self.store = store
        self.job = job
        self.enable_cache = enable_cache

    def caching(self, name: str) -> bool:
        """The task's compiled caching, unless the launch overrides every task's."""
        if self.enable_cache is not None:
            return self.enable_cache
        return bool(self.job.tasks[name].get("cachingOptions", {}).get("enableCache", False))

    def new_outputs(self, name: str, task_root: str) -> Dict[str, List[dict]]:
        """The task's output artifacts, by key, as the orchestrator registers them before the
        task runs (one each)."""
        job = self.job
        return {
            key: [
                self.store.new_artifact(
                    schema_title(spec["artifactType"]["instanceSchema"]),
                    spec["artifactType"]["instanceSchema"],
                    job.shape.output_uri(task_root, key),
                    pipeline=job.pipeline_name,
                    job=job.job_name,
                    task=name,
                    output_key=key,
                    contexts=[job.pipeline_name, job.job_name],
                )
            ]
            for key, spec in sorted(job.output_definitions(name).items())
        }

    def key(self, name: str, inputs, parameters) -> str:
        """What Kubeflow Pipelines hashes for a task's cache key: the input artifacts' names,
        the parameter values, the outputs' types, the container's image, command and
        arguments (as compiled)."""
        container = self.job.executor_of(name, compiled=True).get("container", {})
        output_defs = self.job.output_definitions(name)
        fingerprint = {
            "inputs": {k: [a["name"] for a in v] for k, v in sorted(inputs.items())},
            "parameters": parameters,
            "outputs": {k: v["artifactType"]["instanceSchema"] for k, v in output_defs.items()},
            "image": container.get("image"),
            "command": container.get("command"),
            "args": container.get("args"),
        }
        text = json.dumps(fingerprint, sort_keys=True, default=str)
        return hashlib.sha256(text.encode()).hexdigest()

    def hit(self, name: str, key: str) -> Optional[dict]:
        """The execution that answers the task from the cache, if caching is on and one ran."""
        return self.store.cached(key) if self.caching(name) else None

    def answer(self, name: str, outputs: dict, key: str, hit: dict) -> Dict[str, List[dict]]:
        """The cached execution's outputs, which the task's take the place of; its own new
        ones were never written."""
        for artifacts in outputs.values():
            for artifact in artifacts:
                artifact["state"] = "ABANDONED"  # never written: the cache answered
        self.store.record_execution(
            job=self.job.job_name,
            task=name,
            cache_key=key,
            state="cached",
            outputs=hit["outputs"],
            cached_from=hit["job"],
        )
        return {
            output: [self.store.artifact(n) for n in names]
            for output, names in hit["outputs"].items()
        }

    def resolve(self, resolver: dict, inputs: Dict[str, List[dict]]) -> dict:
        """Each output query's filter over the LIVE artifacts the store holds, its
        `{{$.inputs.artifacts['KEY'].metadata['FIELD']}}` placeholders filled from the task's
        inputs (a placeholder with nothing to fill resolves nothing)."""
        resolved = {}
        for key, query in resolver.get("outputArtifactQueries", {}).items():
            missing = False

            def fill(match):
                nonlocal missing
                artifacts = inputs.get(match["key"], [])
                value = artifacts[0].get("metadata", {}).get(match["field"]) if artifacts else None
                if value is None:
                    missing = True
                    return ""
                return str(value)

            text = INPUT_METADATA.sub(fill, query.get("filter", ""))
            live = [a for a in self.store.artifacts if a["state"] == "LIVE"]
            resolved[key] = [] if missing else filters.select(live, text, query.get("limit") or 1)
        return resolved
