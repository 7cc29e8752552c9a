"""ML Metadata on a MySQL-protocol server (Debian's MariaDB, `make services`): `run
--metadata-uri mysql://...` keeps its metadata there, and caching and the lineage resolvers
(spans, warm start, the drift baseline) work across runs as they do on SQLite."""

import os

import ml_metadata as mlmd
import pytest

from pipeline import configs
from tests.conftest import write_aclimdb
from tests.services.test_team_registry import finish, start, tiny_imdb

pytestmark = pytest.mark.services
RESOLVERS = {"latest_blessed_model_resolver", "baseline_statistics_resolver", "base_model_resolver"}


def test_runs_keep_ml_metadata_in_mariadb_and_cache_and_resolve_across_spans(
    mysql_database, tmp_path
):
    spans = tmp_path / "imdb"
    write_aclimdb(spans / "span-1", copies=3)
    output = tmp_path / "out"
    extra = ["--metadata-uri", mysql_database, "--registry", "none"]
    first = finish(start(tiny_imdb(output, spans / "span-{SPAN}", extra=extra), {}))
    assert first["exit_code"] == 0, first["stderr"]
    assert first["data"]["span"] == 1 and first["blessed"] is True
    metadata_dir = output / "metadata" / "imdb-text-encoder"
    assert not (metadata_dir / "metadata.sqlite").exists()  # only the run's lock is local

    write_aclimdb(spans / "span-2", copies=4)
    second = finish(start(tiny_imdb(output, spans / "span-{SPAN}", extra=extra), {}))
    assert second["exit_code"] == 0, second["stderr"]
    assert second["data"]["span"] == 2
    # Resolved from MariaDB: the first run's champion as the warm start and as the baseline
    # of the evaluation, and its span's statistics as the drift baseline.
    assert second["training"]["warm_start"]["from"].startswith(
        os.path.join(str(output), "pipelines", "imdb-text-encoder", "Trainer", "model")
    )
    assert second["components"]["DistributionValidator"]["state"] == "complete"
    assert second["pushed_version"] > first["pushed_version"]

    third = finish(start(tiny_imdb(output, spans / "span-{SPAN}", extra=extra), {}))
    assert third["exit_code"] == 0, third["stderr"]
    states = {c: s["state"] for c, s in third["components"].items()}
    # The rerun's inputs are the same; a newly blessed baseline reruns the checks against it.
    assert {states[c] for c in ("ReviewsExampleGen", "Transform", "Trainer")} == {"cached"}

    store = mlmd.MetadataStore(configs.metadata_connection(mysql_database))
    runs = store.get_contexts_by_type("pipeline_run")
    assert {c.name for c in runs} == {first["run_id"], second["run_id"], third["run_id"]}
    assert store.get_artifacts_by_type("PushedModel")
