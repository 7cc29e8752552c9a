"""Pushes a blessed model to `<base_directory>/<version>/` in TF Serving's layout.

TFX's own Pusher names versions by the current second and, when that folder already exists,
skips the copy yet still records the model as pushed. On a file system this executor stages a
complete copy in a hidden folder, then renames it to the next free version (>= the current
UNIX time and above every existing version), so that:
  - a version is never overwritten or reused, even by pushes in the same second;
  - a server watching the base directory never sees a partly copied model;
  - a model identical to the newest version (same SavedModel fingerprint, as when a rerun
    re-blesses a cached model) is not published twice: that version is reported instead (also
    when a push was killed after its rename, before ML Metadata recorded it);
  - a staging folder left by a push killed while copying is removed by a later push once it is
    an hour old (no live push takes that long).

Cloud Storage has no rename: renaming a folder there copies and deletes object by object, so a
reader listing the versions could see one half copied. In a bucket (gs://) a version is claimed
first, by creating `.claims/<version>` only if no such object exists (a precondition GCS
checks atomically, so two pushes never share one), then every file is copied into the
version's folder, `saved_model.pb` last: a version is complete once its `saved_model.pb` is
there, and every reader here (the versions a push compares with, the champion when there is no
registry, `predict`'s newest version) takes only complete ones. A version a killed push left
incomplete is never reused, and its folder is removed by a later push once its claim is an
hour old.
"""

import os
import time
import uuid
from typing import Any, Callable, Dict, List, Optional, Tuple

from absl import logging
from tfx import types
from tfx.components.pusher import executor as pusher_executor
from tfx.dsl.io import fileio
from tfx.proto import pusher_pb2
from tfx.types import artifact_utils, standard_component_specs
from tfx.utils import io_utils, proto_utils

from components import file_io


def version_folders(base_directory: str) -> List[int]:
    """Every version folder under `base_directory`, complete or not, in order."""
    if not fileio.isdir(base_directory):
        return []
    names = (name.rstrip("/") for name in file_io.listdir(base_directory))
    return sorted(int(name) for name in names if name.isdigit())


def existing_versions(base_directory: str) -> List[int]:
    """The complete versions under `base_directory` (their saved_model.pb there), in order."""
    return [
        v
        for v in version_folders(base_directory)
        if fileio.exists(os.path.join(base_directory, str(v), SAVED_MODEL))
    ]


SAVED_MODEL = "saved_model.pb"  # what makes a version folder a model: copied last to a bucket
CLAIMS = ".claims"
FINGERPRINT = "fingerprint.pb"  # written by tf.saved_model.save: checksums of the whole model
STAGING_PREFIX = ".staging-"
STALE_STAGING_SECONDS = 3600


def remove_stale_staging(base_directory: str, clock: Callable[[], float] = time.time) -> None:
    """Removes staging folders last written over STALE_STAGING_SECONDS ago: left by killed
    pushes."""
    for name in file_io.listdir(base_directory):
        if not name.startswith(STAGING_PREFIX):
            continue
        path = os.path.join(base_directory, name.rstrip("/"))
        try:
            age = clock() - fileio.stat(path).mtime_nsec / 1e9
        except Exception:  # no modification time here (an object store's prefix): keep it
            continue
        if age > STALE_STAGING_SECONDS:
            logging.info("Removing %s, left by a push that did not finish", path)
            fileio.rmtree(path)


def _fingerprint(model_dir: str):
    path = os.path.join(model_dir, FINGERPRINT)
    if not fileio.exists(path):
        return None
    with fileio.open(path, "rb") as f:
        return f.read()


def publish_new_version(
    model_path: str, base_directory: str, clock: Callable[[], float] = time.time
) -> Tuple[str, str]:
    """Copies `model_path` to a new version folder under `base_directory`; returns (version, path).

    When the newest version holds the same model, returns that version and copies nothing.
    """
    if base_directory.startswith("gs://"):
        return publish_to_bucket(model_path, base_directory, clock)
    fileio.makedirs(base_directory)
    remove_stale_staging(base_directory, clock)
    same = same_as_newest(model_path, base_directory)
    if same:
        return same
    staging = os.path.join(base_directory, f"{STAGING_PREFIX}{uuid.uuid4().hex}")
    io_utils.copy_dir(model_path, staging)
    version = max([int(clock())] + [v + 1 for v in version_folders(base_directory)])
    while True:
        target = os.path.join(base_directory, str(version))
        if not fileio.exists(target):
            try:
                fileio.rename(staging, target, overwrite=False)
                return str(version), target
            except Exception:  # another pusher took this version between the check and the rename
                if not fileio.exists(target):
                    raise
        version += 1


def same_as_newest(model_path: str, base_directory: str) -> Optional[Tuple[str, str]]:
    """(version, path) of the newest complete version when it holds the same SavedModel (by
    its fingerprint) as `model_path`, else None."""
    versions = existing_versions(base_directory)
    if not versions:
        return None
    newest = os.path.join(base_directory, str(versions[-1]))
    fingerprint = _fingerprint(model_path)
    if fingerprint is not None and fingerprint == _fingerprint(newest):
        logging.info("%s is already published as version %s", model_path, versions[-1])
        return str(versions[-1]), newest
    return None


def publish_to_bucket(
    model_path: str, base_directory: str, clock: Callable[[], float] = time.time, client=None
) -> Tuple[str, str]:
    """publish_new_version on Cloud Storage (the module's docstring): a version claimed by a
    create-if-absent, its files copied with saved_model.pb last."""
    from google.api_core import exceptions

    if client is None:
        from google.cloud import storage

        client = storage.Client(project=None)
    same = same_as_newest(model_path, base_directory)
    if same:
        return same
    bucket_name, _, prefix = base_directory[len("gs://") :].rstrip("/").partition("/")
    bucket = client.bucket(bucket_name)
    remove_abandoned_versions(client, bucket_name, prefix, clock)
    claimed = {
        int(b.name.rsplit("/", 1)[1])
        for b in client.list_blobs(bucket_name, prefix=f"{prefix}/{CLAIMS}/")
    }
    version = max(
        [int(clock())] + [v + 1 for v in version_folders(base_directory) + sorted(claimed)]
    )
    while True:
        try:
            bucket.blob(f"{prefix}/{CLAIMS}/{version}").upload_from_string(
                model_path, if_generation_match=0
            )
            break
        except exceptions.PreconditionFailed:  # another push claimed it first
            version += 1
    target = f"{base_directory.rstrip('/')}/{version}"
    files = [
        os.path.relpath(os.path.join(os.fsdecode(root).rstrip("/"), os.fsdecode(name)), model_path)
        for root, _, names in fileio.walk(model_path)
        for name in names
    ]
    for relative in sorted(files, key=lambda f: f == SAVED_MODEL):  # saved_model.pb last
        destination = f"{target}/{relative}"
        fileio.makedirs(os.path.dirname(destination))
        fileio.copy(os.path.join(model_path, relative), destination, overwrite=True)
    return str(version), target


def remove_abandoned_versions(client, bucket_name: str, prefix: str, clock) -> None:
    """Removes the folders of versions claimed over STALE_STAGING_SECONDS ago that never got
    their saved_model.pb (pushes killed while copying)."""
    for claim in client.list_blobs(bucket_name, prefix=f"{prefix}/{CLAIMS}/"):
        version = claim.name.rsplit("/", 1)[1]
        folder = f"gs://{bucket_name}/{prefix}/{version}"
        age = clock() - claim.updated.timestamp()
        if age > STALE_STAGING_SECONDS and not fileio.exists(f"{folder}/{SAVED_MODEL}"):
            logging.info("Removing %s, left incomplete by a push that did not finish", folder)
            if fileio.exists(folder):
                fileio.rmtree(folder)


class Executor(pusher_executor.Executor):
    """The standard Pusher, with `publish_new_version` for filesystem destinations."""

    def Do(
        self,
        input_dict: Dict[str, List[types.Artifact]],
        output_dict: Dict[str, List[types.Artifact]],
        exec_properties: Dict[str, Any],
    ) -> None:
        self._log_startup(input_dict, output_dict, exec_properties)
        model_push = artifact_utils.get_single_instance(
            output_dict[standard_component_specs.PUSHED_MODEL_KEY]
        )
        if not self.CheckBlessing(input_dict):
            self._MarkNotPushed(model_push)
            return
        destination = pusher_pb2.PushDestination()
        proto_utils.json_to_proto(
            exec_properties[standard_component_specs.PUSH_DESTINATION_KEY], destination
        )
        if destination.WhichOneof("destination") != "filesystem":
            raise ValueError(
                "the versioned pusher supports filesystem destinations only, "
                f"not {destination.WhichOneof('destination')}"
            )
        model_path = self.GetModelPath(input_dict)
        version, serving_path = publish_new_version(
            model_path, destination.filesystem.base_directory
        )
        logging.info("Model version %s written to %s", version, serving_path)
        io_utils.copy_dir(model_path, model_push.uri)  # the artifact's own archived copy
        self._MarkPushed(model_push, pushed_destination=serving_path, pushed_version=version)
