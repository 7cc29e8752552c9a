"""The Vertex AI backend at the SDK boundary: the exact upload call, and a stateful fake of
the registry for reruns and concurrent pushes (no cloud here)."""

import re
import threading
import types

import pytest

from components.model_registry.backends import from_config, vertex_config
from components.model_registry.version import ModelVersion

PARENT = "projects/p/locations/europe-west4/models/123"


@pytest.fixture
def aiplatform():
    """Vertex AI's SDK, imported by the tests that use it rather than when every worker collects
    the suite (about 4 s)."""
    from google.cloud import aiplatform

    return aiplatform


class Uploaded:
    version_id = "7"
    resource_name = PARENT


def test_blessed_version_is_uploaded_under_the_parent_model_with_alias_and_labels(
    monkeypatch, aiplatform
):
    calls = []
    monkeypatch.setattr(aiplatform, "init", lambda **kw: calls.append(("init", kw)))
    monkeypatch.setattr(
        aiplatform.Model, "upload", lambda **kw: calls.append(("upload", kw)) or Uploaded()
    )
    registry = from_config(vertex_config("p", "europe-west4", parent_model=PARENT))
    registered = registry.register(
        ModelVersion(
            name="imdb-text-encoder",
            source="gs://bucket/serving/imdb-text-encoder/1795000000",
            blessed=True,
            metrics={"binary_accuracy": 0.8835, "example_count": 5000.0},
            pipeline_name="imdb-text-encoder",
            run_id="2026-11-21T16:34:37.635447",
            pushed_version="1795000000",
            lineage={"model": 13},
        )
    )
    assert calls == [
        ("init", {"project": "p", "location": "europe-west4"}),
        (
            "upload",
            {
                "display_name": "imdb-text-encoder",
                "artifact_uri": "gs://bucket/serving/imdb-text-encoder/1795000000",
                "serving_container_image_uri": (
                    "us-docker.pkg.dev/vertex-ai/prediction/tf2-cpu.2-16:latest"
                ),
                "parent_model": PARENT,
                "is_default_version": True,
                "version_aliases": ["champion"],
                "version_description": "pipeline imdb-text-encoder, run 2026-11-21T16:34:37.635447",
                "labels": {
                    "pipeline": "imdb-text-encoder",
                    "run_id": "2026-11-21t16_34_37_635447",
                    "blessed": "true",
                    "pushed_version": "1795000000",
                    "metric_binary_accuracy": "0_8835",
                    "metric_example_count": "5000_0000",
                },
                "sync": True,
            },
        ),
    ]
    assert (registered.version, registered.alias) == ("7", "champion")
    assert registered.uri == PARENT + "@7"


def test_an_unblessed_version_is_neither_default_nor_aliased(monkeypatch, aiplatform):
    calls = []
    monkeypatch.setattr(aiplatform, "init", lambda **kw: None)
    monkeypatch.setattr(aiplatform.Model, "upload", lambda **kw: calls.append(kw) or Uploaded())
    registered = from_config(vertex_config("p", "us-central1", parent_model=PARENT)).register(
        ModelVersion(
            name="m",
            source="gs://b/m/1",
            blessed=False,
            metrics={},
            pipeline_name="m",
            run_id="r",
            pushed_version="1",
            lineage={},
        )
    )
    assert calls[0]["is_default_version"] is False and calls[0]["version_aliases"] is None
    assert registered.alias is None


class FakeVertex:
    """Vertex AI's model registry as the backend uses it, keeping state across calls: models
    by display name, their versions with labels, and aliases unique within a model."""

    def __init__(self, monkeypatch):
        from google.cloud import aiplatform

        self.models, self.uploads = {}, []  # resource name -> {"display_name", "versions"}
        monkeypatch.setattr(aiplatform, "init", lambda **kw: None)
        monkeypatch.setattr(aiplatform.Model, "upload", self.upload)
        monkeypatch.setattr(aiplatform.Model, "list", self.list_models)
        monkeypatch.setattr(aiplatform.models, "ModelRegistry", self.registry)
        monkeypatch.setattr(
            aiplatform.Model,
            "__init__",
            lambda model, model_name: setattr(model, "fake_name", model_name),
        )
        monkeypatch.setattr(
            aiplatform.Model, "delete", lambda model: self.models.pop(model.fake_name)
        )
        self.lock = threading.Lock()  # the fake's state changes one call at a time

    def upload(self, display_name, parent_model=None, version_aliases=None, labels=None, **kw):
        with self.lock:
            self.uploads.append(kw["artifact_uri"])
            if parent_model is None:
                self.created = getattr(self, "created", 0) + 1
                parent_model = f"projects/p/locations/r/models/{self.created}"
                self.models[parent_model] = {"display_name": display_name, "versions": []}
            versions = self.models[parent_model]["versions"]
            versions.append(
                {
                    "version_id": str(len(versions) + 1),
                    "labels": dict(labels or {}),
                    "version_aliases": [],
                }
            )
            self.move_aliases(parent_model, version_aliases or [], versions[-1]["version_id"])
            return types.SimpleNamespace(
                resource_name=parent_model, version_id=versions[-1]["version_id"]
            )

    def list_models(self, filter, order_by=None):
        name = re.fullmatch(r'display_name="(.*)"', filter).group(1)
        with self.lock:  # oldest first: models are kept in creation order
            return [
                types.SimpleNamespace(resource_name=r)
                for r, m in self.models.items()
                if m["display_name"] == name
            ]

    def move_aliases(self, model, aliases, version_id):
        for version in self.models[model]["versions"]:
            kept = [a for a in version["version_aliases"] if a not in aliases]
            version["version_aliases"] = kept + (
                aliases if version["version_id"] == version_id else []
            )

    def registry(self, model):
        fake = self

        class Registry:
            def list_versions(self, filter=None):
                key, value = re.fullmatch(r"labels\.(\w+)=(\w+)", filter).groups()
                return [
                    types.SimpleNamespace(**{k: v for k, v in version.items() if k != "labels"})
                    for version in fake.models[model]["versions"]
                    if version["labels"].get(key) == value
                ]

            def add_version_aliases(self, new_aliases, version):
                fake.move_aliases(model, new_aliases, version)

        return Registry()

    def aliases(self, model):
        return {v["version_id"]: v["version_aliases"] for v in self.models[model]["versions"]}


def pushed(number: int, fingerprint: str, blessed: bool = True) -> ModelVersion:
    return ModelVersion(
        name="imdb-text-encoder",
        source=f"gs://b/serving/{number}",
        blessed=blessed,
        metrics={},
        pipeline_name="imdb-text-encoder",
        run_id=f"run-{number}",
        pushed_version=str(number),
        lineage={},
        fingerprint=fingerprint,
    )


def test_without_a_parent_the_first_push_creates_the_model_and_reruns_reuse_versions(monkeypatch):
    vertex = FakeVertex(monkeypatch)
    registry = from_config(vertex_config("p", "r"))  # no parent model configured
    first = registry.register(pushed(1, "a" * 64))
    (model,) = vertex.models  # created by the first upload
    second = registry.register(pushed(2, "b" * 64))
    assert list(vertex.models) == [model]  # a version of the same model, found by name
    assert (first.version, second.version) == ("1", "2")
    assert vertex.aliases(model) == {"1": [], "2": ["champion"]}
    # A rerun re-blessing the cached model (same fingerprint, a new push folder): the version
    # that holds it is reported, nothing is uploaded.
    again = registry.register(pushed(3, "b" * 64))
    assert (again.version, again.alias, again.uri) == ("2", "champion", f"{model}@2")
    # Blessing the first model again moves the alias back to its version, without an upload.
    back = registry.register(pushed(4, "a" * 64))
    assert (back.version, back.alias) == ("1", "champion")
    assert vertex.aliases(model) == {"1": ["champion"], "2": []}
    # An unblessed identical model: reported, alias untouched.
    unblessed = registry.register(pushed(5, "b" * 64, blessed=False))
    assert (unblessed.version, unblessed.alias) == ("2", None)
    assert vertex.uploads == ["gs://b/serving/1", "gs://b/serving/2"]
    assert (
        vertex.models[model]["versions"][0]["labels"]["saved_model_fingerprint"] == "a" * 32
    )  # 63 characters at most in a label


def test_two_concurrent_first_pushes_end_as_two_versions_of_one_model(monkeypatch, aiplatform):
    vertex = FakeVertex(monkeypatch)
    both_listed = threading.Barrier(2, timeout=30)
    listings = []

    def list_models(filter, order_by=None):  # each push's first listing finds no model
        found = FakeVertex.list_models(vertex, filter, order_by)
        if len(listings) < 2:
            listings.append(found)
            both_listed.wait()
        return found

    monkeypatch.setattr(aiplatform.Model, "list", list_models)
    registry = from_config(vertex_config("p", "r"))
    results = {}
    pushes = [
        threading.Thread(
            target=lambda n=n: results.update({n: registry.register(pushed(n, f"{n}" * 64))})
        )
        for n in (1, 2)
    ]
    for push in pushes:
        push.start()
    for push in pushes:
        push.join(timeout=60)
    assert listings == [[], []]  # both pushes raced to create the model
    (model,) = vertex.models  # the newer model was folded into the oldest, then deleted
    assert model == "projects/p/locations/r/models/1"
    assert sorted(r.version for r in results.values()) == ["1", "2"]
    assert {r.uri.split("@")[0] for r in results.values()} == {model}
    assert sorted(sum(vertex.aliases(model).values(), [])) == ["champion"]  # one champion
    labels = sorted(
        v["labels"]["saved_model_fingerprint"] for v in vertex.models[model]["versions"]
    )
    assert labels == ["1" * 32, "2" * 32]
