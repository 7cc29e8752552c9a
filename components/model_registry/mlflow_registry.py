"""MLflow Model Registry backend: a local SQLite store under the output directory by default,
or the tracking server MLFLOW_TRACKING_URI names."""

import contextlib
import logging.config
import os
import tempfile
from typing import List, Optional

from components.model_registry import mlflow_model
from components.model_registry.version import CHAMPION, FINGERPRINT_TAG, ModelVersion, Registered

NAME = "mlflow"
MODEL_ARTIFACT = "model"  # the MLflow Model in each version's run
SAVED_MODEL_TAG = "saved_model"  # the pushed SavedModel the MLflow Model holds a copy of


SQLITE = "sqlite:///"


def local_tracking_uri(registry_dir: str) -> str:
    return SQLITE + os.path.join(os.path.abspath(registry_dir), "mlflow.db")


@contextlib.contextmanager
def _logging_untouched():
    """MLflow creates a SQLite store's tables with alembic, whose env.py calls
    logging.config.fileConfig: that replaces the root handlers (the pipeline's progress and log
    file) and prints each migration. Skip it while the store is set up."""
    file_config = logging.config.fileConfig
    logging.config.fileConfig = lambda *args, **kwargs: None
    try:
        yield
    finally:
        logging.config.fileConfig = file_config


class MlflowRegistry:
    """Each version is a complete MLflow Model (mlflow_model.py: pyfunc code, a copy of the
    pushed SavedModel, signature, input example, requirements) logged to an MLflow run that
    holds the TFMA metrics and the lineage as params and tags. The version is created only
    after the model is wholly logged, so what it points at is never partial."""

    def __init__(
        self, tracking_uri: str, artifact_root: Optional[str] = None, alias: str = CHAMPION
    ):
        from mlflow import MlflowClient

        self.tracking_uri, self.artifact_root, self.alias = tracking_uri, artifact_root, alias
        if tracking_uri.startswith(SQLITE):
            os.makedirs(os.path.dirname(tracking_uri[len(SQLITE) :]), exist_ok=True)
        with _logging_untouched():  # the stores (and a new database's tables) start here
            self.client = MlflowClient(tracking_uri=tracking_uri, registry_uri=tracking_uri)
            self.client.search_experiments(max_results=1)
            self.client.search_registered_models(max_results=1)

    def _experiment_id(self, name: str) -> str:
        from mlflow.exceptions import MlflowException

        experiment = self.client.get_experiment_by_name(name)
        if experiment is not None:
            return experiment.experiment_id
        try:
            location = (
                f"file://{os.path.abspath(self.artifact_root)}/{name}"
                if self.artifact_root
                else None
            )
            return self.client.create_experiment(name, artifact_location=location)
        except MlflowException:  # created meanwhile by a concurrent registration
            return self.client.get_experiment_by_name(name).experiment_id

    def _ensure_model(self, name: str) -> None:
        from mlflow.exceptions import MlflowException

        try:
            self.client.create_registered_model(
                name, description="Registered by tfx-transformers' ModelRegistry component."
            )
        except MlflowException as error:
            if error.error_code != "RESOURCE_ALREADY_EXISTS":
                raise

    def find(self, name: str, source: str, fingerprint: str = ""):
        """The version already registered for this model, if any: the same SavedModel
        fingerprint (wherever it was pushed to), else the same source."""
        for version in self.client.search_model_versions(f"name='{name}'"):
            if fingerprint and version.tags.get(FINGERPRINT_TAG) == fingerprint:
                return version
            if version.tags.get(SAVED_MODEL_TAG) == source:
                return version
        return None

    def register(self, version: ModelVersion) -> Registered:
        self._ensure_model(version.name)
        existing = self.find(version.name, version.source, version.fingerprint)
        if existing is None:  # a rerun that pushed nothing new registers nothing new
            tags = {**version.tags(), SAVED_MODEL_TAG: version.source}
            run = self.client.create_run(
                self._experiment_id(version.name), run_name=version.run_id, tags=tags
            )
            run_id = run.info.run_id
            for key, value in sorted(version.metrics.items()):
                if value is not None:
                    self.client.log_metric(run_id, key, value)
            self.client.log_param(run_id, SAVED_MODEL_TAG, version.source)
            try:
                self._log_model(run_id, version.source)
            except BaseException:
                self.client.set_terminated(run_id, status="FAILED")
                raise
            self.client.set_terminated(run_id)
            existing = self.client.create_model_version(
                version.name,
                source=f"{run.info.artifact_uri}/{MODEL_ARTIFACT}",
                run_id=run_id,
                tags=tags,
                description=f"pipeline {version.pipeline_name}, run {version.run_id}",
            )
        alias = None
        if version.blessed:
            self.client.set_registered_model_alias(version.name, self.alias, existing.version)
            alias = self.alias
        return Registered(
            NAME,
            version.name,
            str(existing.version),
            f"models:/{version.name}/{existing.version}",
            alias,
        )

    def _log_model(self, run_id: str, saved_model: str) -> None:
        """Packages the SavedModel in a local staging folder, then logs it whole to the run."""
        os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")
        with tempfile.TemporaryDirectory(prefix="mlflow-model-") as staging:
            path = os.path.join(staging, MODEL_ARTIFACT)
            try:
                mlflow_model.save(saved_model, path)
            except Exception as error:
                raise RuntimeError(
                    f"cannot package the SavedModel {saved_model} as an MLflow Model: {error}"
                ) from error
            self.client.log_artifacts(run_id, path, MODEL_ARTIFACT)

    # Reading and changing the registry (tfx-transformers registry ...).

    def versions(self, name: Optional[str] = None) -> List[dict]:
        names = [name] if name else [m.name for m in self.client.search_registered_models()]
        rows = []
        for model_name in names:
            for found in self.client.search_model_versions(f"name='{model_name}'"):
                rows.append(self.show(model_name, str(found.version)))
        return sorted(rows, key=lambda r: (r["name"], int(r["version"])))

    def show(self, name: str, version: str) -> dict:
        found = self.client.get_model_version(name, version)
        metrics = self.client.get_run(found.run_id).data.metrics if found.run_id else {}
        return {
            "registry": NAME,
            "name": name,
            "version": str(found.version),
            "aliases": sorted(found.aliases),
            "source": found.source,
            "saved_model": found.tags.get(SAVED_MODEL_TAG, ""),
            "metrics": dict(sorted(metrics.items())),
            "tags": dict(sorted(found.tags.items())),
        }

    def by_alias(self, name: str, alias: str) -> dict:
        return self.show(name, str(self.client.get_model_version_by_alias(name, alias).version))

    def promote(self, name: str, version: str, alias: str, force: bool = False) -> dict:
        """Moves `alias` to the version; refuses an unblessed one unless `force`."""
        found = self.client.get_model_version(name, version)
        if found.tags.get("blessed") != "true" and not force:
            raise ValueError(
                f"{name} version {version} was not blessed by the Evaluator; "
                f"pass --force to make it {alias!r} anyway"
            )
        self.client.set_registered_model_alias(name, alias, version)
        return self.show(name, version)
