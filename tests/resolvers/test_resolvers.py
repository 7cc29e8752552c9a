"""The lineage resolvers on a real (in-memory) ML Metadata store with the lineage a pipeline
writes: ExampleGen -> StatisticsGen, Transform -> Trainer -> Evaluator."""

import ml_metadata as mlmd
from ml_metadata.proto import metadata_store_pb2
from tfx.types import standard_artifacts

from components.resolvers.base_model import PreviousDataChampionStrategy
from components.resolvers.baseline_statistics import ChampionDataStatisticsStrategy

EVENT = metadata_store_pb2.Event


class Lineage:
    def __init__(self):
        config = metadata_store_pb2.ConnectionConfig()
        config.fake_database.SetInParent()
        self.store = mlmd.MetadataStore(config)
        self.execution_type = self.store.put_execution_type(
            metadata_store_pb2.ExecutionType(name="Component")
        )

    def artifact(self, kind, **custom):
        artifact = kind()
        artifact.uri = "/tmp/nowhere"
        for name, value in custom.items():
            artifact.set_int_custom_property(name, value)
        type_id = self.store.put_artifact_type(artifact.artifact_type)
        artifact.type_id = type_id
        artifact.artifact_type.id = type_id
        [artifact.id] = self.store.put_artifacts([artifact.mlmd_artifact])
        return artifact

    def run(self, inputs: dict, outputs: dict):
        """An execution that took `inputs` and produced `outputs` (key -> artifact)."""
        [execution] = self.store.put_executions(
            [metadata_store_pb2.Execution(type_id=self.execution_type)]
        )
        events = []
        for kind, artifacts in ((EVENT.INPUT, inputs), (EVENT.OUTPUT, outputs)):
            for key, artifact in artifacts.items():
                event = EVENT(artifact_id=artifact.id, execution_id=execution, type=kind)
                event.path.steps.add().key = key
                events.append(event)
        self.store.put_events(events)

    def span_run(self, blessed: bool):
        """ExampleGen, StatisticsGen, Transform, Trainer, Evaluator of one span."""
        examples = self.artifact(standard_artifacts.Examples)
        self.run({}, {"examples": examples})
        statistics = self.artifact(standard_artifacts.ExampleStatistics)
        self.run({"examples": examples}, {"statistics": statistics})
        transformed = self.artifact(standard_artifacts.Examples)
        self.run({"examples": examples}, {"transformed_examples": transformed})
        model = self.artifact(standard_artifacts.Model)
        self.run({"examples": transformed}, {"model": model})
        blessing = self.artifact(
            standard_artifacts.ModelBlessing, blessed=int(blessed), current_model_id=model.id
        )
        self.run({"examples": examples, "model": model}, {"blessing": blessing})
        return examples, statistics, model, blessing


def test_the_baseline_is_the_statistics_of_the_latest_blessed_models_data():
    lineage = Lineage()
    first = lineage.span_run(blessed=True)
    second = lineage.span_run(blessed=True)
    refused = lineage.span_run(blessed=False)  # e.g. a span whose model was not blessed
    resolve = ChampionDataStatisticsStrategy().resolve_artifacts
    everything = {
        "model_blessing": [first[3], second[3], refused[3]],
        "statistics": [first[1], second[1], refused[1]],
    }
    assert [a.id for a in resolve(lineage.store, everything)["statistics"]] == [second[1].id]
    assert (
        resolve(lineage.store, {"model_blessing": [refused[3]], "statistics": [refused[1]]})[
            "statistics"
        ]
        == []
    )


def test_the_base_model_is_the_latest_champion_of_other_examples():
    lineage = Lineage()
    first = lineage.span_run(blessed=True)
    second = lineage.span_run(blessed=True)
    resolve = PreviousDataChampionStrategy().resolve_artifacts
    models = {"model": [first[2], second[2]], "model_blessing": [first[3], second[3]]}
    # A run on new examples starts from the latest champion.
    new = lineage.artifact(standard_artifacts.Examples)
    assert [m.id for m in resolve(lineage.store, {**models, "examples": [new]})["model"]] == [
        second[2].id
    ]
    # A rerun on span 2's examples: not its own champion, the one before (so it stays cached).
    assert [m.id for m in resolve(lineage.store, {**models, "examples": [second[0]]})["model"]] == [
        first[2].id
    ]
    # The first span's rerun: nothing trained on other data was blessed before it.
    assert (
        resolve(
            lineage.store,
            {"model": [first[2]], "model_blessing": [first[3]], "examples": [first[0]]},
        )["model"]
        == []
    )
