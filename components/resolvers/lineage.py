"""MLMD lineage the pipeline's resolvers follow: which execution produced or consumed an
artifact, and what an execution took as input."""

from typing import List

import ml_metadata as mlmd
from ml_metadata.proto import metadata_store_pb2

OUTPUT, INPUT = metadata_store_pb2.Event.OUTPUT, metadata_store_pb2.Event.INPUT


def executions(store: mlmd.MetadataStore, artifact_id: int, kind) -> List[int]:
    """The executions that took (INPUT) or produced (OUTPUT) the artifact."""
    return [
        e.execution_id for e in store.get_events_by_artifact_ids([artifact_id]) if e.type == kind
    ]


def inputs(store: mlmd.MetadataStore, execution_id: int, key: str) -> List[int]:
    """The artifacts an execution took under input `key`."""
    return [
        e.artifact_id
        for e in store.get_events_by_execution_ids([execution_id])
        if e.type == INPUT and e.path.steps and e.path.steps[0].key == key
    ]


def upstream(store: mlmd.MetadataStore, artifact_id: int, *keys: str) -> List[int]:
    """The artifacts reached from `artifact_id` by going to its producer and taking its inputs
    under keys[0], then theirs under keys[1]...: a model -> "examples" -> "examples" is the raw
    examples its Trainer's transformed examples came from."""
    found = [artifact_id]
    for key in keys:
        found = [
            source
            for artifact in found
            for producer in executions(store, artifact, OUTPUT)
            for source in inputs(store, producer, key)
        ]
    return found
