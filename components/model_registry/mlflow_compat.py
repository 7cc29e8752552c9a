"""The one place the project reaches into MLflow's internals, each a process-wide setting held
only while a block runs and restored after it; tests/registry/test_mlflow_compat.py checks each
against the installed MLflow, so that an upgrade which moves one fails there, by name."""

import contextlib
import logging.config
import os
from typing import Optional


@contextlib.contextmanager
def logging_untouched():
    """MLflow creates a SQLite store's tables with alembic, whose env.py calls
    logging.config.fileConfig: that replaces the root handlers (the pipeline's progress and log
    file) and prints each migration. Skip it while the store is set up."""
    file_config = logging.config.fileConfig
    logging.config.fileConfig = lambda *args, **kwargs: None
    try:
        yield
    finally:
        logging.config.fileConfig = file_config


@contextlib.contextmanager
def default_artifacts_in(folder: Optional[str]):
    """MLflow gives a SQLite store with no artifact root of its own the folder `./mlruns` of the
    process's working directory, and creates it there (an empty `mlruns/` wherever a pipeline or
    `registry` command ran, or `serve`'s workers loaded a model): while the block builds the
    store, its default is `folder`."""
    from mlflow.tracking._tracking_service import utils

    name = "DEFAULT_LOCAL_FILE_AND_ARTIFACT_PATH"
    saved = getattr(utils, name, None)
    if folder is None or saved is None:
        yield
        return
    setattr(utils, name, folder)
    try:
        yield
    finally:
        setattr(utils, name, saved)


@contextlib.contextmanager
def tracking_uri_set_to(tracking_uri: str):
    """MLflow resolves a proxied artifact URI (mlflow-artifacts:/...) against the process's
    tracking URI, not the client's: this sets it to the registry's while the block runs, then
    restores it and MLFLOW_TRACKING_URI as they were."""
    from mlflow.tracking._tracking_service import utils

    saved, saved_env = utils._tracking_uri, os.environ.get("MLFLOW_TRACKING_URI")
    utils._tracking_uri = tracking_uri  # type: ignore[assignment]  # a str or None in MLflow
    try:
        yield
    finally:
        utils._tracking_uri = saved
        if saved_env is None:
            os.environ.pop("MLFLOW_TRACKING_URI", None)
        else:
            os.environ["MLFLOW_TRACKING_URI"] = saved_env
