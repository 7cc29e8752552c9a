"""The MLflow internals the registry holds for a block (components/model_registry/
mlflow_compat.py), checked against the installed MLflow: an upgrade that moves one fails here."""

import importlib.util
import logging.config
import os

import mlflow
from mlflow.tracking._tracking_service import utils

from components.model_registry import mlflow_compat


def test_alembics_logging_setup_is_skipped_inside_the_block_only():
    env = importlib.util.find_spec("mlflow.store.db_migrations.env").origin
    with open(env) as f:
        assert "fileConfig(" in f.read()  # what the block stops from replacing our handlers
    original = logging.config.fileConfig
    with mlflow_compat.logging_untouched():
        assert logging.config.fileConfig is not original
    assert logging.config.fileConfig is original


def test_the_default_artifact_folder_is_set_inside_the_block_only(tmp_path):
    saved = utils.DEFAULT_LOCAL_FILE_AND_ARTIFACT_PATH
    with mlflow_compat.default_artifacts_in(str(tmp_path)):
        assert utils.DEFAULT_LOCAL_FILE_AND_ARTIFACT_PATH == str(tmp_path)
    assert utils.DEFAULT_LOCAL_FILE_AND_ARTIFACT_PATH == saved


def test_the_process_tracking_uri_is_the_registrys_inside_the_block_only(monkeypatch, tmp_path):
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    before = utils._tracking_uri
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    with mlflow_compat.tracking_uri_set_to(uri):
        assert mlflow.get_tracking_uri() == uri
    assert utils._tracking_uri == before and "MLFLOW_TRACKING_URI" not in os.environ
