"""The model card describes the data that ran: the embedded sample, a public corpus the task
recognises by its files, or the user's folder (and then nothing of the task's own corpus)."""

import gzip
import json

import pytest

from pipeline.tasks import TASKS, get_task
from pipeline.tasks.cifar10 import CIFAR10_CLASSES
from pipeline.tasks.translation import MULTI30K_TRAIN_PAIRS


def card_text(card: dict) -> str:
    return json.dumps({k: card[k] for k in ("description", "data", "intended_use", "limitations")})


@pytest.mark.parametrize("task", sorted(TASKS))
def test_the_embedded_corpus_is_described_as_the_projects_generated_sample(task):
    card = TASKS[task].model_card(TASKS[task].default_model, None, TASKS[task].default_data_dir)
    assert card["corpus"] and card["data"].startswith("the project's embedded")
    assert "data/generate_" in card["data"] and "Trying the pipeline" in card["intended_use"]


def test_a_folder_of_other_reviews_gets_a_card_about_that_folder_and_not_about_movies(tmp_path):
    folder = tmp_path / "shop-reviews"
    folder.mkdir()
    (folder / "reviews.csv").write_text("text,label\nGreat kettle,1\n")
    card = get_task("imdb").model_card("text_encoder", "small", str(folder))
    assert not card["corpus"] and card["data"] == str(folder)
    assert card["description"] == f"Binary sentiment (positive or negative), trained on {folder}"
    assert f"texts like those in {folder}" in card["intended_use"]
    assert f"Trained on {folder} only" in card["limitations"][0]
    assert "truncated" in card["limitations"][-1]  # the task's caveat that holds on any data
    text = card_text(card).lower()
    assert "movie" not in text and "imdb" not in text and "rating" not in text


def test_a_compiled_jobs_card_names_the_jobs_data_folder():
    card = get_task("imdb").model_card("text_encoder", None, object())  # a runtime parameter
    assert card["data"] == "the job's data folder" and not card["corpus"]


def test_the_public_corpora_are_recognised_by_their_files(tmp_path):
    imdb = tmp_path / "imdb" / "aclImdb"
    imdb.mkdir(parents=True)
    (imdb / "README").write_text("Large Movie Review Dataset v1.0\n\nOverview ...")
    for folder in (imdb.parent, imdb):  # the extracted tarball's parent, or aclImdb itself
        card = get_task("imdb").model_card("text_encoder", None, str(folder))
        assert card["corpus"] and card["data"].startswith("the IMDB Large Movie Review Dataset")
        assert "Learned from IMDB users' ratings" in " ".join(card["limitations"])
    cifar = tmp_path / "cifar"
    for name in CIFAR10_CLASSES:
        (cifar / "train" / name).mkdir(parents=True)
    assert (
        get_task("cifar10").model_card("vit", None, str(cifar))["data"]
        == "CIFAR-10 (Krizhevsky, 2009)"
    )
    (cifar / "train" / "unicorn").mkdir()  # an eleventh class: not CIFAR-10
    assert not get_task("cifar10").model_card("vit", None, str(cifar))["corpus"]
    multi30k = tmp_path / "multi30k"
    multi30k.mkdir()
    for lines in (MULTI30K_TRAIN_PAIRS, 100):
        with gzip.open(multi30k / "train.de.gz", "wt") as f:
            f.writelines("Ein Hund läuft.\n" for _ in range(lines))
        card = get_task("translation").model_card("translator", None, str(multi30k))
        assert card["corpus"] == (lines == MULTI30K_TRAIN_PAIRS), lines
