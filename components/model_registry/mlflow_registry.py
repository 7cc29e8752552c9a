"""MLflow Model Registry backend: a local SQLite store under the output directory by default,
or the tracking server MLFLOW_TRACKING_URI names (docs/team.md: a team's server, its
database, and what happens when it is down)."""

import contextlib
import functools
import logging
import logging.config
import os
import re
import tempfile
from typing import Callable, List, Optional, Tuple, TypeVar

from components.model_registry import mlflow_compat, mlflow_model
from components.model_registry.version import CHAMPION, FINGERPRINT_TAG, ModelVersion, Registered
from trainer_module import faults

NAME = "mlflow"
MODEL_ARTIFACT = "model"  # the MLflow Model in each version's run
SAVED_MODEL_TAG = "saved_model"  # the pushed SavedModel the MLflow Model holds a copy of


SQLITE = "sqlite:///"
# How long a registration keeps retrying a tracking server that does not answer (down,
# restarting, overloaded) before it fails with an error naming the server.
RETRY_SECONDS = 120.0
RETRY_ENV = "TFXT_REGISTRY_RETRY_SECONDS"  # overrides RETRY_SECONDS (tests: a few seconds)
# MLflow's own retries of each HTTP request (default 7, about 4 minutes) are cut to this, so that
# RETRY_SECONDS bounds the whole registration; MLFLOW_HTTP_REQUEST_MAX_RETRIES overrides it.
REQUEST_RETRIES = "2"

T = TypeVar("T")
_log = logging.getLogger(__name__)


def mlflow_metric_key(name: str) -> str:
    """A TFMA metric name as MLflow takes it (no parentheses or "="):
    `f1_score (class_id=0)` -> `f1_score/class_id:0`."""
    return re.sub(r" \((\w+)=([^)]*)\)", r"/\1:\2", name)


class RegistryUnavailable(RuntimeError):
    """The tracking server did not answer within the retry budget."""


def unavailable(error: Optional[BaseException]) -> bool:
    """Whether `error` means the tracking server did not answer (refused or dropped the
    connection, timed out, or answered 5xx/429), as against refusing the request itself."""
    import requests
    from mlflow.exceptions import MlflowException, RestException

    while error is not None:
        if isinstance(error, (requests.ConnectionError, requests.Timeout)):
            return True
        if isinstance(error, requests.HTTPError) and error.response is not None:
            return error.response.status_code >= 500 or error.response.status_code == 429
        if isinstance(error, RestException):
            return error.get_http_status_code() >= 500
        if isinstance(error, MlflowException) and str(error).startswith("API request to"):
            text = str(error)
            return any(
                mark in text
                for mark in ("failed with exception", "failed with timeout", "Max retries")
            )
        error = error.__cause__ or error.__context__
    return False


CONCURRENT_WRITE_ATTEMPTS = 5  # writes that other registrations' writes may collide with


def concurrent_write(error: BaseException) -> bool:
    """Whether `error` is a tracking server's store refusing a row another request inserted at
    the same moment (MLflow answers a database IntegrityError with 400 BAD_REQUEST, so it is
    not `unavailable`): a write to repeat after reading again, not a bad request."""
    from mlflow.exceptions import MlflowException

    if not isinstance(error, MlflowException):
        return False
    text = str(error)
    return any(
        mark in text
        for mark in ("IntegrityError", "UniqueViolation", "duplicate key", "UNIQUE constraint")
    )


def with_retries(call: Callable[[], T], server: str, seconds: float) -> T:
    """call(), retried with exponential backoff (1 s, doubling, at most 15 s) while the server
    is `unavailable`, for at most `seconds`; then RegistryUnavailable naming the server."""
    import tenacity

    retrying = tenacity.Retrying(
        retry=tenacity.retry_if_exception(unavailable),
        wait=tenacity.wait_exponential(multiplier=1, min=1, max=15),
        stop=tenacity.stop_before_delay(seconds),
        before_sleep=lambda state: _log.warning(
            "MLflow tracking server %s did not answer (attempt %d): retrying in %.0f s",
            server,
            state.attempt_number,
            state.upcoming_sleep,
        ),
    )
    try:
        return retrying(call)
    except tenacity.RetryError as error:
        attempt = error.last_attempt
        raise RegistryUnavailable(
            f"the MLflow tracking server {server} did not answer for "
            f"{retrying.statistics['delay_since_first_attempt']:.0f} s ({attempt.attempt_number} "
            f"attempts; {RETRY_ENV} sets the limit). Last error: {attempt.exception()}"
        ) from attempt.exception()


def local_store(registry_dir: str) -> str:
    """The local registry's SQLite file."""
    return os.path.join(os.path.abspath(registry_dir), "mlflow.db")


def local_tracking_uri(registry_dir: str) -> str:
    return SQLITE + local_store(registry_dir)


class MlflowRegistry:
    """Each version is a complete MLflow Model (mlflow_model.py: pyfunc code, a copy of the
    pushed SavedModel, signature, input example, requirements) logged to an MLflow run that
    holds the TFMA metrics and the lineage as params and tags. The version is created only
    after the model is wholly logged, so what it points at is never partial."""

    def __init__(
        self,
        tracking_uri: str,
        artifact_root: Optional[str] = None,
        alias: str = CHAMPION,
        retry_seconds: Optional[float] = None,
    ):
        from mlflow import MlflowClient

        self.tracking_uri, self.artifact_root, self.alias = tracking_uri, artifact_root, alias
        self.retry_seconds = float(
            retry_seconds if retry_seconds is not None else os.environ.get(RETRY_ENV, RETRY_SECONDS)
        )
        os.environ.setdefault("MLFLOW_HTTP_REQUEST_MAX_RETRIES", REQUEST_RETRIES)
        if tracking_uri.startswith(SQLITE):
            os.makedirs(os.path.dirname(tracking_uri[len(SQLITE) :]), exist_ok=True)
        # The stores (and a new database's tables) start here.
        with mlflow_compat.logging_untouched(), mlflow_compat.default_artifacts_in(artifact_root):
            self.client = MlflowClient(tracking_uri=tracking_uri, registry_uri=tracking_uri)
            self._retried(lambda: self.client.search_experiments(max_results=1))
            self._retried(lambda: self.client.search_registered_models(max_results=1))

    def _retried(self, call: Callable[[], T]) -> T:
        return with_retries(call, self.tracking_uri, self.retry_seconds)

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
            experiment = self.client.get_experiment_by_name(name)
            if experiment is None:  # deleted again meanwhile: the error stands
                raise
            return experiment.experiment_id

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
        """Registers the version (retried while the server does not answer: a retry finds
        what an earlier attempt registered by its fingerprint, and an attempt cut off while
        uploading left no version) and, if blessed, moves the alias by `_crown`'s rule."""
        with mlflow_compat.tracking_uri_set_to(self.tracking_uri):
            return self._retried(lambda: self._register(version))

    def _register(self, version: ModelVersion) -> Registered:
        self._ensure_model(version.name)
        existing = self.find(version.name, version.source, version.fingerprint)
        if existing is None:  # a rerun that pushed nothing new registers nothing new
            existing = self._new_version(
                version.name,
                {**version.tags(), SAVED_MODEL_TAG: version.source},
                version.metrics,
                version.run_id,
                f"pipeline {version.pipeline_name}, run {version.run_id}",
                lambda run_id: self._log_model(run_id, version.source),
            )
            if version.blessed:
                self._crown(version.name)
        elif version.blessed and self._holder(version.name) is None:
            self._crown(version.name)  # a rerun after a registration cut off before the alias
        # else nothing new: the alias stays where it is (a promote by hand included)
        return Registered(
            NAME,
            version.name,
            str(existing.version),
            f"models:/{version.name}/{existing.version}",
            self.alias if self._holder(version.name) == str(existing.version) else None,
        )

    def _new_version(
        self,
        name: str,
        tags: dict,
        metrics: dict,
        run_name: str,
        description: str,
        log_model: Callable[[str], None],
    ):
        """A run holding the metrics and the MLflow Model (`log_model(run_id)` logs it whole),
        then, only once that finished, the version pointing at it."""
        run = self.client.create_run(self._experiment_id(name), run_name=run_name, tags=tags)
        run_id = run.info.run_id
        for key, value in sorted(metrics.items()):
            if value is not None:
                self.client.log_metric(run_id, mlflow_metric_key(key), value)
        self.client.log_param(run_id, SAVED_MODEL_TAG, tags[SAVED_MODEL_TAG])
        faults.point("registry.uploading")
        try:
            log_model(run_id)
        except BaseException:
            with contextlib.suppress(Exception):  # the server may be what failed
                self.client.set_terminated(run_id, status="FAILED")
            raise
        self.client.set_terminated(run_id)
        for attempt in range(CONCURRENT_WRITE_ATTEMPTS):
            try:
                return self.client.create_model_version(
                    name,
                    source=f"{run.info.artifact_uri}/{MODEL_ARTIFACT}",
                    run_id=run_id,
                    tags=tags,
                    description=description,
                )
            except Exception as error:
                # Another registration took the same version number at the same moment.
                if not concurrent_write(error) or attempt + 1 == CONCURRENT_WRITE_ATTEMPTS:
                    raise
                _log.info("Version number of %s taken meanwhile: asking for the next", name)

    def copy_to(self, target: "MlflowRegistry", name: Optional[str] = None) -> List[dict]:
        """Copies every version of `name` (default: of every model) into `target`, oldest
        first: the complete MLflow Model, its run's metrics, its tags and description; then
        points each alias there at the copy of the version it names here. A version `target`
        already holds (the same SavedModel fingerprint) is not copied again, so a copy cut off
        part-way is finished by running it again. Returns `target`'s rows of these versions."""
        names = [name] if name else sorted(m.name for m in self.client.search_registered_models())
        rows = []
        for model in names:
            target._retried(functools.partial(target._ensure_model, model))
            copies = {}
            versions = self.client.search_model_versions(f"name='{model}'")
            for found in sorted(versions, key=lambda v: int(v.version)):
                copied = target._retried(functools.partial(self._copy_version, found, target))
                copies[str(found.version)] = str(copied.version)
            for alias, held in self.client.get_registered_model(model).aliases.items():
                if str(held) in copies:
                    target._retried(
                        functools.partial(
                            target.client.set_registered_model_alias,
                            model,
                            alias,
                            copies[str(held)],
                        )
                    )
            rows += [target.show(model, copied) for copied in copies.values()]
        return rows

    def _copy_version(self, found, target: "MlflowRegistry"):
        """One version of this registry in `target`: the one already there, else a copy."""
        import mlflow

        tags = {SAVED_MODEL_TAG: "", **found.tags}
        existing = target.find(found.name, tags[SAVED_MODEL_TAG], tags.get(FINGERPRINT_TAG, ""))
        if existing is not None:
            return existing
        metrics = self.client.get_run(found.run_id).data.metrics if found.run_id else {}
        with tempfile.TemporaryDirectory(prefix="mlflow-copy-") as staging:
            with mlflow_compat.tracking_uri_set_to(self.tracking_uri):
                local = mlflow.artifacts.download_artifacts(
                    artifact_uri=found.source, dst_path=staging
                )
            with mlflow_compat.tracking_uri_set_to(target.tracking_uri):
                return target._new_version(
                    found.name,
                    tags,
                    metrics,
                    tags.get("pipeline_run_id", ""),
                    found.description or "",
                    lambda run_id: target.client.log_artifacts(run_id, local, MODEL_ARTIFACT),
                )

    def _holder(self, name: str) -> Optional[str]:
        """The version the alias names, if any."""
        from mlflow.exceptions import MlflowException

        try:
            return str(self.client.get_model_version_by_alias(name, self.alias).version)
        except MlflowException as error:
            if error.error_code in ("RESOURCE_DOES_NOT_EXIST", "INVALID_PARAMETER_VALUE"):
                return None
            raise

    def _crown(self, name: str) -> Optional[str]:
        """Points the alias at the newest blessed version (the highest number: the one
        registered last), and returns it. Each registration re-reads after it writes until the
        alias and the newest blessed version agree, so that concurrent registrations, whatever
        the order their writes land in, leave the alias on the newest; `registry promote`
        moves it elsewhere by hand until the next blessed version is registered."""
        for _ in range(20):
            blessed = [
                int(v.version)
                for v in self.client.search_model_versions(f"name='{name}'")
                if v.tags.get("blessed") == "true"
            ]
            if not blessed:
                return None
            newest = str(max(blessed))
            if self._holder(name) == newest:
                return newest
            try:
                self.client.set_registered_model_alias(name, self.alias, newest)
            except Exception as error:
                if not concurrent_write(error):
                    raise
                # Another registration created the alias at the same moment (MLflow's store
                # inserts it, and a second insert breaks the key): read again.
                _log.info(
                    "The %s alias of %s was set meanwhile: reading it again", self.alias, name
                )
        return self._holder(name)

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

    def champion(self, name: str) -> Optional[Tuple[str, str]]:
        """(version, pushed SavedModel) of the version holding the alias, or None when the
        model or the alias does not exist yet (components/champion_model)."""
        from mlflow.exceptions import MlflowException

        try:
            found = self._retried(lambda: self.client.get_model_version_by_alias(name, self.alias))
        except MlflowException as error:
            if unavailable(error):
                raise
            return None  # no such model, or no version holds the alias
        return str(found.version), found.tags.get(SAVED_MODEL_TAG, "")

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
