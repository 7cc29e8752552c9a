"""Cloud Storage on loopback (pipeline/launch/gcs.py), as every client of a job's steps speaks to
it: TensorFlow's gs:// file system through the gateway's HTTPS proxy, Beam's gcsio and
google-cloud-storage through STORAGE_EMULATOR_HOST, each refreshing its credentials first;
Kubeflow's launcher downloading an input a folder marker breaks (kubeflow/pipelines#13476),
the kubeflow entrypoint's removal of markers mending it; the Pusher publishing a version in a
bucket, which has no rename."""

import os

import pytest
import tensorflow as tf

from components.versioned_pusher.executor import (
    CLAIMS,
    existing_versions,
    publish_to_bucket,
    version_folders,
)
from pipeline.kubeflow_entrypoint import folder_markers, remove_folder_markers
from pipeline.launch.gcs import with_content_ids
from pipeline.launch.kfp_launcher import DownloadError, KfpLauncher
from pipeline.launch.shapes import KfpBackend, KubeflowShape
from tests.gcs_util import names, running_emulator

BUCKET = "bucket"


@pytest.fixture(scope="module")
def gcs(tmp_path_factory):
    with running_emulator(tmp_path_factory.mktemp("gcs"), buckets=(BUCKET,)) as emulator:
        yield emulator


def test_tensorflow_reads_writes_lists_and_renames_through_the_gateway(gcs):
    g = tf.io.gfile
    g.makedirs(f"gs://{BUCKET}/tf/empty")
    assert g.isdir(f"gs://{BUCKET}/tf/empty") and g.listdir(f"gs://{BUCKET}/tf/empty") == []
    with g.GFile(f"gs://{BUCKET}/tf/a/f.txt", "w") as f:
        f.write("hello")
    g.rename(f"gs://{BUCKET}/tf/a/f.txt", f"gs://{BUCKET}/tf/a/g.txt")
    assert g.GFile(f"gs://{BUCKET}/tf/a/g.txt").read() == "hello"
    assert g.glob(f"gs://{BUCKET}/tf/a/*.txt") == [f"gs://{BUCKET}/tf/a/g.txt"]
    # As on Cloud Storage, every folder TensorFlow made is a zero-byte "name/" object.
    assert names(gcs, BUCKET, "tf/") == ["tf/", "tf/a/g.txt", "tf/empty/"]
    # A SavedModel, as every export is written and read.
    module = tf.Module()
    module.v = tf.Variable(3.0)
    module.f = tf.function(lambda: module.v * 2, input_signature=[])
    tf.saved_model.save(module, f"gs://{BUCKET}/tf/model")
    assert float(tf.saved_model.load(f"gs://{BUCKET}/tf/model").f()) == 6.0


def test_beam_writes_and_reads_through_gcsio(gcs, tmp_path):
    import apache_beam as beam

    with beam.Pipeline() as p:  # its write ends in a rename: a batch of copies and deletes
        _ = p | beam.Create(["x", "y"]) | beam.io.WriteToText(f"gs://{BUCKET}/beam/out")
    assert names(gcs, BUCKET, "beam/") == ["beam/out-00000-of-00001"]
    with beam.Pipeline() as p:
        lines = p | beam.io.ReadFromText(f"gs://{BUCKET}/beam/out*")
        _ = lines | beam.combiners.Count.Globally() | beam.io.WriteToText(str(tmp_path / "n"))
    assert open(tmp_path / "n-00000-of-00001").read().strip() == "2"


def test_google_cloud_storage_refreshes_its_credentials_through_the_gateway(gcs):
    import google.auth
    from google.auth.transport import requests as transport
    from google.cloud import storage

    credentials, _ = google.auth.default()
    credentials.refresh(transport.Request())  # https://oauth2.googleapis.com/token, answered
    assert credentials.token == "emulated"
    client = storage.Client(credentials=credentials)
    client.bucket(BUCKET).blob("gcs/x").upload_from_string("1")
    assert client.bucket(BUCKET).blob("gcs/x").download_as_bytes() == b"1"


def test_the_gateway_answers_for_googles_storage_hosts_only(gcs):
    import http.client

    connection = http.client.HTTPConnection("127.0.0.1", gcs.port, timeout=10)
    connection.request("CONNECT", "example.com:443")
    assert connection.getresponse().status == 403


def test_each_part_of_a_batch_gets_the_content_id_the_emulator_needs():
    body = (
        b"--B\r\nContent-Type: application/http\r\n\r\nDELETE /storage/v1/b/x/o/a HTTP/1.1\r\n\r\n"
        b"\r\n--B\r\nContent-Type: application/http\r\nContent-ID: <given>\r\n\r\nDELETE /b "
        b"HTTP/1.1\r\n\r\n\r\n--B--\r\n"
    )
    fixed = with_content_ids(body, 'multipart/mixed; boundary="B"')
    assert fixed.count(b"Content-ID:") == 2 and b"Content-ID: <given>" in fixed
    assert b"Content-ID: <part-1>" in fixed and fixed.endswith(b"--B--\r\n")


def write_as_tensorflow_does(gcs, prefix: str) -> None:
    """An artifact as TFX writes one on Cloud Storage: a marker for each folder it made."""
    bucket = gcs.client().bucket(BUCKET)
    for name, data in (
        (f"{prefix}/", b""),
        (f"{prefix}/Split-train/", b""),
        (f"{prefix}/Split-train/FeatureStats.pb", b"stats"),
        (f"{prefix}/empty/", b""),
    ):
        bucket.blob(name).upload_from_string(data)


def kfp_input(uri: str) -> dict:
    artifact = {"name": "9", "type": {"instanceSchema": ""}, "uri": uri, "metadata": {}}
    return {"inputs": {"artifacts": {"statistics": {"artifacts": [artifact]}}}}


def test_a_folder_marker_breaks_kubeflows_download_until_the_markers_are_removed(gcs, tmp_path):
    """kubeflow/pipelines#13476: the launcher joins keys as paths, so `stats/` becomes a file
    and `stats/Split-train/...` cannot be written; the entrypoint's removal of the markers of
    folders that hold objects mends it, and the empty folder keeps its marker."""
    write_as_tensorflow_does(gcs, "run/stats")
    shape = KubeflowShape("p", "j", f"gs://{BUCKET}/root", "", KfpBackend.of("2.17.0"))
    pod = tmp_path / "pod"
    launcher = KfpLauncher(gcs.client(), shape, str(pod))
    log = tmp_path / "task.log"
    with pytest.raises(DownloadError, match="failed to create local directory.*not a directory"):
        launcher.download_inputs(kfp_input(f"gs://{BUCKET}/run/stats"), str(log))
    assert 'failed to download input artifact "statistics"' in log.read_text()

    removed = remove_folder_markers([f"gs://{BUCKET}/run/stats"], gcs.client())
    assert sorted(removed) == [f"gs://{BUCKET}/run/stats/", f"gs://{BUCKET}/run/stats/Split-train/"]
    assert names(gcs, BUCKET, "run/") == [
        "run/stats/Split-train/FeatureStats.pb",
        "run/stats/empty/",
    ]
    (pod / "gcs").mkdir(parents=True, exist_ok=True)
    launcher = KfpLauncher(gcs.client(), shape, str(tmp_path / "pod2"))
    launcher.download_inputs(kfp_input(f"gs://{BUCKET}/run/stats"), str(log))
    local = tmp_path / "pod2" / "gcs" / BUCKET / "run" / "stats"
    assert (local / "Split-train" / "FeatureStats.pb").read_bytes() == b"stats"
    assert (local / "empty").is_file()  # the empty folder's marker: a harmless file


def test_markers_are_those_of_folders_holding_other_objects():
    listed = ["a/", "a/b/", "a/b/c", "a/e/", "a/f"]
    assert folder_markers(listed) == ["a/", "a/b/"]


@pytest.mark.parametrize("release, sibling", [("2.16.1", True), ("2.17.0", False)])
def test_from_kfp_2_17_the_download_skips_keys_beside_the_artifact(gcs, tmp_path, release, sibling):
    bucket = gcs.client().bucket(BUCKET)
    bucket.blob(f"side{release}/model/saved_model.pb").upload_from_string(b"m")
    bucket.blob(f"side{release}/model_run/history.json").upload_from_string(b"{}")
    shape = KubeflowShape("p", "j", f"gs://{BUCKET}/root", "", KfpBackend.of(release))
    launcher = KfpLauncher(gcs.client(), shape, str(tmp_path))
    launcher.download_inputs(kfp_input(f"gs://{BUCKET}/side{release}/model"), str(tmp_path / "l"))
    folder = tmp_path / "gcs" / BUCKET / f"side{release}"
    assert (folder / "model" / "saved_model.pb").exists()
    assert (folder / "model_run" / "history.json").exists() == sibling


def test_the_emulator_keeps_its_objects_markers_included_across_a_restart(tmp_path):
    with running_emulator(tmp_path / "g", environ=False) as first:
        first.client().bucket(BUCKET).blob("keep/").upload_from_string(b"")
        first.client().bucket(BUCKET).blob("keep/x" + "y" * 300).upload_from_string(b"1")
        first.save()
    with running_emulator(tmp_path / "g", buckets=(), environ=False) as second:
        assert names(second, BUCKET) == ["keep/", "keep/x" + "y" * 300]


def model(folder, content: str) -> str:
    os.makedirs(folder / "variables", exist_ok=True)
    (folder / "saved_model.pb").write_text(content)
    (folder / "variables" / "variables.index").write_text(content)
    (folder / "fingerprint.pb").write_text("fingerprint-" + content)
    return str(folder)


def test_a_push_to_a_bucket_claims_its_version_and_copies_saved_model_pb_last(gcs, tmp_path):
    base = f"gs://{BUCKET}/serving/imdb"
    copied = []
    real_copy = tf.io.gfile.copy

    def recording(src, dst, overwrite=False):
        copied.append(os.path.basename(dst))
        return real_copy(src, dst, overwrite=overwrite)

    import components.versioned_pusher.executor as pusher

    pusher.fileio.copy, saved = recording, pusher.fileio.copy
    try:
        first = publish_to_bucket(model(tmp_path / "a", "a"), base, lambda: 100, gcs.client())
        second = publish_to_bucket(model(tmp_path / "b", "b"), base, lambda: 100, gcs.client())
    finally:
        pusher.fileio.copy = saved
    assert (first[0], second[0]) == ("100", "101")  # the same second: distinct versions
    assert copied[-1] == "saved_model.pb" and copied.index("saved_model.pb") == 2
    assert names(gcs, BUCKET, f"serving/imdb/{CLAIMS}/") == [
        f"serving/imdb/{CLAIMS}/100",
        f"serving/imdb/{CLAIMS}/101",
    ]
    same = publish_to_bucket(model(tmp_path / "b2", "b"), base, lambda: 200, gcs.client())
    assert same == ("101", f"{base}/101")  # the same SavedModel is not published twice


def test_a_push_killed_while_copying_leaves_no_reader_a_partial_version(gcs, tmp_path):
    import components.versioned_pusher.executor as pusher
    from components.champion_model.executor import newest_pushed
    from pipeline.predict import resolve_model_dir

    base = f"gs://{BUCKET}/serving/killed"
    publish_to_bucket(model(tmp_path / "a", "a"), base, lambda: 100, gcs.client())

    def killed(src, dst, overwrite=False):
        if dst.endswith("saved_model.pb"):
            raise KeyboardInterrupt  # the push dies before its last write
        return tf.io.gfile.copy(src, dst, overwrite=overwrite)

    pusher.fileio.copy, saved = killed, pusher.fileio.copy
    try:
        with pytest.raises(KeyboardInterrupt):
            publish_to_bucket(model(tmp_path / "b", "b"), base, lambda: 200, gcs.client())
    finally:
        pusher.fileio.copy = saved
    assert version_folders(base) == [100, 200]  # the second's folder, half written
    assert existing_versions(base) == [100]
    assert newest_pushed(base) == ("100", f"{base}/100")
    assert resolve_model_dir(base) == f"{base}/100"
    # The next push never reuses the abandoned version; once its claim is an hour old, a
    # push removes its folder.
    third = publish_to_bucket(model(tmp_path / "c", "c"), base, lambda: 200, gcs.client())
    assert third[0] == "201"
    fourth = publish_to_bucket(model(tmp_path / "d", "d"), base, lambda: 1e10, gcs.client())
    assert version_folders(base) == [100, 201, int(fourth[0])]
