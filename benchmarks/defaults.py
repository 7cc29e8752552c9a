"""The results files of each task's default recipe on the full public data, one per machine
kind it was measured on (named by CPU family and model in each file). The headline results
table (README, docs) and the cost projection's measured speeds
(components/cost_estimate/measured_speeds.json) are built from these files and no others."""

import json
import os

from benchmarks.report import RESULTS_DIR

# (task, family) -> "<benchmark>/<results file name>", the default preset's runs.
DEFAULT_RESULTS = {
    ("imdb", "text_encoder"): (
        "imdb_pipeline/text_encoder-small-zen4",
        "imdb_pipeline/text_encoder-small-zen5",
    ),
    ("imdb", "bert"): (
        "imdb_pipeline/bert-minilm-320-default-zen4",
        "imdb_pipeline/bert-minilm-320-default-intel-amx",
    ),
    ("translation", "translator"): (
        "translation_pipeline/translator-base-default-exact-zen4",
        "translation_pipeline/translator-base-default-intel-amx",
        "translation_pipeline/translator-base-34-epochs-zen5",
    ),
    ("cifar10", "vit"): ("cifar10_pipeline/vit-hybrid-airbench-25-epochs-zen5",),
}


# Each task's default family run on its embedded corpus (`python -m benchmarks.speeds
# --embedded NAME`): the pipeline's fixed cost beyond training, which small data pays whole.
EMBEDDED_RESULTS = ("embedded_corpus/defaults-zen4",)


def default_names(embedded: bool = True) -> set:
    """The results file names of the tasks' default runs, and (`embedded`) of the embedded
    corpora's."""
    names = [name for names in DEFAULT_RESULTS.values() for name in names]
    return {name.split("/")[1] for name in names + (list(EMBEDDED_RESULTS) if embedded else [])}


def load(name: str) -> dict:
    with open(os.path.join(RESULTS_DIR, f"{name}.json"), encoding="utf-8") as f:
        return json.load(f)


def default_records():
    """(task, family, results file name, record) for every default run."""
    for (task, family), names in DEFAULT_RESULTS.items():
        for name in names:
            yield task, family, name, load(name)
