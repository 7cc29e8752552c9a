"""The Vertex AI backend at the SDK boundary: the exact upload call (no cloud here)."""
from google.cloud import aiplatform

from components.model_registry.backends import from_config, vertex_config
from components.model_registry.version import ModelVersion

PARENT = "projects/p/locations/europe-west4/models/123"


class Uploaded:
    version_id = "7"
    resource_name = PARENT


def test_blessed_version_is_uploaded_under_the_parent_model_with_alias_and_labels(monkeypatch):
    calls = []
    monkeypatch.setattr(aiplatform, "init", lambda **kw: calls.append(("init", kw)))
    monkeypatch.setattr(aiplatform.Model, "upload",
                        lambda **kw: calls.append(("upload", kw)) or Uploaded())
    registry = from_config(vertex_config("p", "europe-west4", parent_model=PARENT))
    registered = registry.register(ModelVersion(
        name="imdb-text-encoder", source="gs://bucket/serving/imdb-text-encoder/1795000000",
        blessed=True, metrics={"binary_accuracy": 0.8835, "example_count": 5000.0},
        pipeline_name="imdb-text-encoder", run_id="2026-11-21T16:34:37.635447",
        pushed_version="1795000000", lineage={"model": 13}))
    assert calls == [
        ("init", {"project": "p", "location": "europe-west4"}),
        ("upload", {
            "display_name": "imdb-text-encoder",
            "artifact_uri": "gs://bucket/serving/imdb-text-encoder/1795000000",
            "serving_container_image_uri":
                "us-docker.pkg.dev/vertex-ai/prediction/tf2-cpu.2-16:latest",
            "parent_model": PARENT,
            "is_default_version": True,
            "version_aliases": ["champion"],
            "version_description": "pipeline imdb-text-encoder, run 2026-11-21T16:34:37.635447",
            "labels": {"pipeline": "imdb-text-encoder", "run_id": "2026-11-21t16_34_37_635447",
                       "blessed": "true", "pushed_version": "1795000000",
                       "metric_binary_accuracy": "0_8835",
                       "metric_example_count": "5000_0000"},
            "sync": True,
        }),
    ]
    assert (registered.version, registered.alias) == ("7", "champion")
    assert registered.uri == PARENT + "@7"


def test_an_unblessed_version_is_neither_default_nor_aliased(monkeypatch):
    calls = []
    monkeypatch.setattr(aiplatform, "init", lambda **kw: None)
    monkeypatch.setattr(aiplatform.Model, "upload",
                        lambda **kw: calls.append(kw) or Uploaded())
    registered = from_config(vertex_config("p", "us-central1", parent_model=PARENT)).register(
        ModelVersion(name="m", source="gs://b/m/1", blessed=False, metrics={},
                     pipeline_name="m", run_id="r", pushed_version="1", lineage={}))
    assert calls[0]["is_default_version"] is False and calls[0]["version_aliases"] is None
    assert registered.alias is None
