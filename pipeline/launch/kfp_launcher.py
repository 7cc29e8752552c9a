"""What a Kubeflow Pipelines 2 launcher does around a task's command, on Cloud Storage
(kubeflow/pipelines `backend/src/v2/component/launcher_v2.go` and `objectstore/object_store.go`,
as of the release `KfpBackend` names): before the command, every input artifact is downloaded
into the pod, to `/gcs/BUCKET/PATH` (`downloadArtifacts`); after it, every output artifact
whose local path the command wrote is uploaded, and the task's log is uploaded to its
`executor-logs` output (`uploadOutputArtifacts`).

The download is `DownloadBlob`'s: every object whose key starts with the artifact's key is
listed, and each is written to the local folder joined with its key relative to the
artifact's (Go's `filepath.Rel` and `filepath.Join`, which drop a trailing slash), its folder
made first (`os.MkdirAll`). A zero-byte `dir/` marker object, which TensorFlow's GCS file
system writes for every folder it makes, becomes a file named `dir`, and the next object under
it cannot make its folder: the step fails before its command starts (kubeflow/pipelines#13476).
From 2.17, keys that are not under the artifact's folder (a sibling `model_run` beside `model`)
are skipped and a key that climbs out of it is refused.
"""

import os
import posixpath
from typing import Iterable, Tuple

from pipeline.launch.shapes import EXECUTOR_LOGS, KubeflowShape


class DownloadError(RuntimeError):
    """The launcher could not download an input (the step fails before its command runs)."""


def split_uri(uri: str) -> Tuple[str, str]:
    """(bucket, key) of gs://BUCKET/KEY."""
    bucket, _, key = uri[len("gs://") :].partition("/")
    return bucket, key


def relative_key(blob_dir: str, key: str) -> str:
    """Go's filepath.Rel(blobDir, key) for a key under blobDir: cleaned, so a trailing slash
    goes, and the key equal to blobDir (with a slash) is "."."""
    return posixpath.relpath(posixpath.normpath(key), posixpath.normpath(blob_dir))


def download_blob(objects: Iterable[Tuple[str, bytes]], local_dir: str, blob_dir: str, backend):
    """Writes `objects` ((key, content), as listed under the prefix `blob_dir`) into
    `local_dir` as DownloadBlob does (the module's docstring); raises DownloadError as its
    errors read."""
    for key, content in objects:
        if backend.checks_download_prefix:
            under = key == blob_dir.rstrip("/") or key.startswith(blob_dir.rstrip("/") + "/")
            if not under:
                continue
            if ".." in key.split("/"):
                raise DownloadError(f"path traversal detected: blob key {key!r} contains '..'")
        local = os.path.join(local_dir, relative_key(blob_dir, key))
        local = os.path.normpath(local)
        folder = os.path.dirname(local)
        try:
            os.makedirs(folder, exist_ok=True)
        except (FileExistsError, NotADirectoryError):
            raise DownloadError(
                f"downloadFile(): unable to complete copying {key!r} to local storage "
                f"{local!r}: failed to create local directory {folder!r}: mkdir {folder}: not a "
                "directory"
            ) from None
        try:
            with open(local, "wb") as f:
                f.write(content)
        except IsADirectoryError:
            raise DownloadError(
                f"downloadFile(): unable to complete copying {key!r} to local storage "
                f"{local!r}: unable to open local file {local!r} for writing: open {local}: is a "
                "directory"
            ) from None


class KfpLauncher:
    """The launcher's part of a task on Cloud Storage, through `client` (google-cloud-storage),
    for `shape` (a KubeflowShape), the pod's disk being the folder `pod_root`."""

    def __init__(self, client, shape: KubeflowShape, pod_root: str):
        self.client, self.shape, self.pod_root = client, shape, pod_root

    def listed(self, uri: str):
        bucket, key = split_uri(uri)
        for blob in self.client.list_blobs(bucket, prefix=key):
            yield blob.name, blob.download_as_bytes()

    def download_inputs(self, executor_input: dict, log_file: str) -> None:
        """Every input artifact, into the pod's /gcs/ (downloadArtifacts); a failure is written
        to the task's log, as the launcher logs it, and raised."""
        for name, listed in executor_input["inputs"].get("artifacts", {}).items():
            for artifact in listed.get("artifacts", []):
                uri = artifact["uri"]
                if not uri.startswith("gs://"):
                    continue
                local = self.shape.local_path(uri, self.pod_root)
                try:
                    download_blob(self.listed(uri), local, split_uri(uri)[1], self.shape.backend)
                except DownloadError as error:
                    failure = DownloadError(
                        f'failed to execute component: failed to download input artifact "{name}" '
                        f'from remote storage URI "{uri}": {error}'
                    )
                    with open(log_file, "a") as log:
                        log.write(f"# Kubeflow's launcher, before the command: {failure}\n")
                    raise failure from None

    def upload_outputs(self, executor_input: dict, log_file: str, succeeded: bool) -> None:
        """Each output whose local path the command wrote, and the task's log as its
        `executor-logs` (only that one when the task failed)."""
        for name, listed in executor_input["outputs"].get("artifacts", {}).items():
            if not succeeded and name != EXECUTOR_LOGS:
                continue
            for artifact in listed.get("artifacts", []):
                uri = artifact["uri"]
                local = self.shape.local_path(uri, self.pod_root)
                if name == EXECUTOR_LOGS:
                    if not os.path.exists(log_file):
                        continue  # the command never started: no log to record
                    os.makedirs(os.path.dirname(local), exist_ok=True)
                    with open(log_file, "rb") as source, open(local, "wb") as copy:
                        copy.write(source.read())
                if os.path.exists(local):
                    self.upload(local, uri)

    def upload(self, local: str, uri: str) -> None:
        """UploadBlob: a file to its key, a folder's files each under it."""
        bucket_name, key = split_uri(uri)
        bucket = self.client.bucket(bucket_name)
        if os.path.isfile(local):
            bucket.blob(key).upload_from_filename(local)
            return
        for root, _, files in os.walk(local):
            for file_name in files:
                path = os.path.join(root, file_name)
                relative = os.path.relpath(path, local).replace(os.sep, "/")
                bucket.blob(f"{key}/{relative}").upload_from_filename(path)
