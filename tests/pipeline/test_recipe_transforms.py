"""Each task's benchmark recipe, the preset that `run` trains on a user's data, goes through
tf.Transform as TFX's Transform component runs it (lab/local_transform.py: the
analysis with deep copies of any later phase's input). Outside its benchmark, nothing else
transforms a recipe preset: a recipe whose analyzers need a second phase failed only there."""

import pytest

from lab.local_transform import analyze_and_transform
from pipeline.tasks import TASKS
from tests.conftest import (
    COLOURS,
    PAIRS,
    REVIEWS,
    image_spec,
    pair_spec,
    picture,
    review_spec,
)
from tests.family_util import import_path


def rows_and_spec(task_name: str):
    if task_name == "translation":
        return [{"source": s, "target": t} for s, t in PAIRS], pair_spec()
    if task_name == "imdb":
        return REVIEWS, review_spec()
    from tests.image_util import encode

    rows = [
        {"image": encode(picture(name, 32, seed)), "label": label, "label_name": name}
        for seed in range(2)
        for label, name in enumerate(COLOURS)
    ]
    return rows, image_spec()


RECIPES = [(name, family) for name, task in sorted(TASKS.items()) for family in task.model_families]


# The slow tier: a Beam job per recipe (the default tier runs each family's preprocessing_fn
# through tf.Transform on its shared run, and the main job's on the tiny preset end to end).
@pytest.mark.slow
@pytest.mark.parametrize("task_name, model", RECIPES)
def test_each_recipe_transforms_as_the_transform_component_runs_it(
    task_name, model, tmp_path, request
):
    """Each family of each task, with the preset that `run --model` trains on a user's data
    (BERT's reads the vocabulary of a tiny checkpoint in place of the downloaded one)."""
    task = TASKS[task_name]
    family = task.model_family(model)
    recipe = task.recipe_preset if model == task.default_model else None
    overrides = {}
    if model == "bert":
        overrides["backbone_preset"] = request.getfixturevalue("tiny_bert_checkpoint")
    config = family.config(recipe or family.default_preset, overrides)
    rows, spec = rows_and_spec(task_name)
    transformed, output = analyze_and_transform(
        rows,
        import_path(family.preprocessing_fn),
        family.transform_config(config),
        str(tmp_path),
        spec,
    )
    assert len(transformed) == len(rows)
    assert set(transformed[0]) == set(output.transformed_feature_spec())
    if task_name == "translation":  # the recipe's joint vocabulary: the writable ids' asset
        from trainer_module.translator.preprocessing import output_ids

        assert config.shared_vocabulary and len(output_ids(output)) > 4
