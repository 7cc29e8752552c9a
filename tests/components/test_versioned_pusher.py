import json
import os

from tfx.proto import pusher_pb2
from tfx.types import standard_artifacts
from tfx.utils import proto_utils

from components.versioned_pusher import Executor, publish_new_version


def make_model(path, content="v1"):
    os.makedirs(os.path.join(path, "variables"), exist_ok=True)
    with open(os.path.join(path, "saved_model.pb"), "w") as f:
        f.write(content)
    with open(os.path.join(path, "variables", "variables.index"), "w") as f:
        f.write(content)
    with open(os.path.join(path, "fingerprint.pb"), "w") as f:
        f.write("fingerprint-" + content)
    return str(path)


def test_pushes_in_the_same_second_get_distinct_versions(tmp_path):
    base = str(tmp_path / "serving" / "imdb")
    clock = lambda: 1_700_000_000.5  # noqa: E731 - every push in the same second
    versions = [
        publish_new_version(make_model(tmp_path / f"m{i}", f"v{i}"), base, clock)[0]
        for i in range(3)
    ]
    assert versions == ["1700000000", "1700000001", "1700000002"]
    for i, version in enumerate(versions):
        with open(os.path.join(base, version, "saved_model.pb")) as f:
            assert f.read() == f"v{i}"  # nothing overwritten
    assert sorted(os.listdir(base)) == versions  # no staging folder left behind


def test_a_push_removes_staging_folders_left_by_killed_pushes_once_an_hour_old(tmp_path):
    base = tmp_path / "serving"
    now = 1_700_000_000
    for name, age in (("old", 3 * 3600), ("live", 60)):
        make_model(base / f".staging-{name}", "partial")
        os.utime(base / f".staging-{name}", (now - age, now - age))
    version, _ = publish_new_version(
        make_model(tmp_path / "m", "new"), str(base), clock=lambda: now
    )
    assert sorted(os.listdir(base)) == [".staging-live", version]  # a live push's is kept


def test_existing_versions_are_never_overwritten_even_from_the_future(tmp_path):
    base = tmp_path / "serving"
    make_model(base / "2000000000", "published")
    version, path = publish_new_version(
        make_model(tmp_path / "m", "new"), str(base), clock=lambda: 1_700_000_000
    )
    assert version == "2000000001"
    assert (base / "2000000000" / "saved_model.pb").read_text() == "published"


def test_a_version_taken_between_check_and_rename_is_skipped(tmp_path, monkeypatch):
    from components.versioned_pusher import executor as module

    base = tmp_path / "serving"
    real_rename = module.fileio.rename
    renames = []

    def rename_after_a_rival(src, dst, overwrite=False):
        renames.append(os.path.basename(dst))
        if len(renames) == 1:  # another pusher publishes this version after the free-check
            make_model(dst, "other")
        return real_rename(src, dst, overwrite=overwrite)

    monkeypatch.setattr(module.fileio, "rename", rename_after_a_rival)
    version, _ = publish_new_version(
        make_model(tmp_path / "m", "mine"), str(base), clock=lambda: 100
    )
    assert renames == ["100", "101"]
    assert version == "101"
    assert (base / "100" / "saved_model.pb").read_text() == "other"
    assert (base / "101" / "saved_model.pb").read_text() == "mine"


def test_the_same_model_is_not_published_twice(tmp_path):
    base = str(tmp_path / "serving")
    model = make_model(tmp_path / "m", "same")
    first = publish_new_version(model, base, clock=lambda: 100)
    again = publish_new_version(model, base, clock=lambda: 200)
    assert first == again == ("100", os.path.join(base, "100"))
    assert (
        publish_new_version(make_model(tmp_path / "n", "other"), base, clock=lambda: 300)[0]
        == "300"
    )


def run_pusher(tmp_path, blessed: bool):
    model = standard_artifacts.Model()
    model.uri = str(tmp_path / "model")
    make_model(tmp_path / "model" / "Format-Serving")
    blessing = standard_artifacts.ModelBlessing()
    blessing.uri = str(tmp_path / "blessing")
    blessing.set_int_custom_property("blessed", int(blessed))
    pushed = standard_artifacts.PushedModel()
    pushed.uri = str(tmp_path / "pushed")
    destination = pusher_pb2.PushDestination(
        filesystem=pusher_pb2.PushDestination.Filesystem(base_directory=str(tmp_path / "serving"))
    )
    Executor().Do(
        {"model": [model], "model_blessing": [blessing]},
        {"pushed_model": [pushed]},
        {
            "push_destination": proto_utils.proto_to_json(destination),
            "custom_config": json.dumps({}),
        },
    )
    return pushed


def test_executor_pushes_a_blessed_model(tmp_path):
    pushed = run_pusher(tmp_path, blessed=True)
    assert pushed.get_int_custom_property("pushed") == 1
    destination = pushed.get_string_custom_property("pushed_destination")
    assert os.path.exists(os.path.join(destination, "saved_model.pb"))
    assert os.path.dirname(destination) == str(tmp_path / "serving")


def test_executor_does_not_push_an_unblessed_model(tmp_path):
    pushed = run_pusher(tmp_path, blessed=False)
    assert pushed.get_int_custom_property("pushed") == 0
    assert not (tmp_path / "serving").exists()
