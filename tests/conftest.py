"""Shared fixtures: tiny review corpora the tests write themselves."""
import os
import pathlib

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import pytest  # noqa: E402

POSITIVE = ["a wonderful film, I loved it", "brilliant acting and a great story",
            "superb, moving and funny", "the best movie this year!", "great fun, loved the cast",
            "excellent and charming <br /><br />truly great", "wonderful score, brilliant cast",
            "I loved every minute: superb"]
NEGATIVE = ["a terrible film, I hated it", "awful acting and a boring story",
            "dull, lifeless and flat", "the worst movie this year!", "boring mess, hated the cast",
            "terrible and tedious <br /><br />truly awful", "awful score, boring cast",
            "I hated every minute: dull"]


def write_aclimdb(root: pathlib.Path, splits=("train", "test"), copies: int = 1) -> pathlib.Path:
    """Writes `root/aclImdb/<split>/{pos,neg}/ID_RATING.txt`; returns `root`."""
    for split in splits:
        review_id = 0
        for _ in range(copies):
            for folder, texts, ratings in (("pos", POSITIVE, (7, 8, 9, 10)),
                                           ("neg", NEGATIVE, (1, 2, 3, 4))):
                for i, text in enumerate(texts):
                    path = root / "aclImdb" / split / folder / f"{review_id}_{ratings[i % 4]}.txt"
                    path.parent.mkdir(parents=True, exist_ok=True)
                    path.write_text(text, "utf-8")
                    review_id += 1
    return root


@pytest.fixture
def aclimdb_dir(tmp_path) -> pathlib.Path:
    return write_aclimdb(tmp_path / "data")


@pytest.fixture(scope="session")
def tiny_bert_preset(tmp_path_factory) -> str:
    """A randomly initialised 2-layer BERT saved as a local KerasHub preset directory."""
    from trainer_module.models.bert_tiny_preset import write_tiny_preset

    return write_tiny_preset(str(tmp_path_factory.mktemp("bert") / "preset"),
                             hidden_dim=16, intermediate_dim=32, max_sequence_length=64)
