"""What a launch records under its output, in place of Vertex ML Metadata: every artifact
(name, type, URI, metadata, state, contexts) and every task execution with its cache key. One
JSON file, replaced whole on each write (written to a temporary name, then renamed), so that a
launch killed at any moment leaves the previous state readable."""

import contextlib
import datetime
import fcntl
import json
import os
from typing import Any, Dict, List, Optional

ARTIFACT_PREFIX = "projects/local/locations/local/metadataStores/default/artifacts/"


class Store:
    def __init__(self, folder: str):
        self.folder = folder
        self.path = os.path.join(folder, "metadata.json")
        os.makedirs(folder, exist_ok=True)
        self.data: Dict[str, Any] = {"artifacts": [], "executions": []}
        self.load()

    def load(self) -> None:
        if os.path.exists(self.path):
            with open(self.path) as f:
                self.data = json.load(f)

    @contextlib.contextmanager
    def locked(self):
        """Holds the output's launch lock: one launch at a time per output (a second one is
        refused with a message naming the lock file)."""
        lock_path = os.path.join(self.folder, "launch.lock")
        with open(lock_path, "w") as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise RuntimeError(
                    f"another launch is using this output (it holds {lock_path}); wait for it "
                    "to finish or use another --output"
                ) from None
            self.load()  # what a launch that finished meanwhile recorded
            yield self

    def save(self) -> None:
        temporary = self.path + ".tmp"
        with open(temporary, "w") as f:
            json.dump(self.data, f, indent=1, sort_keys=True)
        os.replace(temporary, self.path)

    # Artifacts.

    @property
    def artifacts(self) -> List[dict]:
        return self.data["artifacts"]

    def new_artifact(self, schema_title: str, instance_schema: str, uri: str, **fields) -> dict:
        """A PENDING artifact (an output about to be written), with the next name."""
        sequence = len(self.artifacts) + 1
        artifact = {
            "name": f"{ARTIFACT_PREFIX}{sequence}",
            "sequence": sequence,
            "schema_title": schema_title,
            "instance_schema": instance_schema,
            "uri": uri,
            "metadata": {},
            "state": "PENDING",
            "create_time": now(),
            **fields,
        }
        self.artifacts.append(artifact)
        return artifact

    def artifact(self, name: str) -> dict:
        for artifact in self.artifacts:
            if artifact["name"] == name:
                return artifact
        raise KeyError(f"no artifact {name} in {self.path}")

    def publish(self, name: str, metadata: Dict[str, Any]) -> dict:
        """Records what the executor wrote about an artifact, and makes it LIVE."""
        artifact = self.artifact(name)
        artifact["metadata"] = {**artifact["metadata"], **metadata}
        artifact["state"] = "LIVE"
        artifact["update_time"] = now()
        return artifact

    # Executions.

    def cached(self, cache_key: str) -> Optional[dict]:
        """The newest succeeded execution with this cache key whose outputs are all LIVE."""
        for execution in reversed(self.data["executions"]):
            if execution["cache_key"] != cache_key or execution["state"] != "succeeded":
                continue
            names = [n for names in execution["outputs"].values() for n in names]
            if all(self.artifact(n)["state"] == "LIVE" for n in names):
                return execution
        return None

    def record_execution(self, **execution) -> dict:
        self.data["executions"].append(execution)
        return execution


def now() -> str:
    """RFC 3339, as Vertex AI writes times (and compares them in filters)."""
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="microseconds")
