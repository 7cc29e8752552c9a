"""What every model family declares (trainer_module/<family>/__init__.py: FAMILY), checked the
same way for each: a new family gets these checks by adding its folder."""

import dataclasses
import importlib

import pytest

from tests.docs.macros import docs_macros
from trainer_module.families import FAMILIES, get_family

NAMES = sorted(FAMILIES)


def resolve(dotted: str):
    module, name = dotted.rsplit(".", 1)
    return getattr(importlib.import_module(module), name)


def test_the_families_are_found_by_their_folders():
    assert NAMES == ["bert", "text_encoder", "translator", "vit"]
    with pytest.raises(ValueError, match="unknown model family 'transformer'"):
        get_family("transformer")


@pytest.mark.parametrize("name", NAMES)
def test_every_config_field_has_a_comment_saying_why(name):
    config_class = type(FAMILIES[name].config())
    # In the class that declares each field: the config's own, or a mixin's (WidePathConfig).
    comments = docs_macros.field_comments(config_class)
    assert set(comments) == {field.name for field in dataclasses.fields(config_class)}
    uncommented = sorted(field for field, comment in comments.items() if not comment)
    assert not uncommented, f"{config_class.__name__} fields without a comment: {uncommented}"


@pytest.mark.parametrize("name", NAMES)
def test_every_preset_is_valid_and_the_config_round_trips(name):
    family = FAMILIES[name]
    assert family.default_preset in family.presets
    for preset in family.presets.values():
        assert type(preset).from_dict(preset.to_dict()) == preset
        # Transform's custom_config names fields of the config, with their values.
        for key, value in family.transform_config(preset).items():
            assert getattr(preset, key) == value


@pytest.mark.parametrize("name", NAMES)
def test_the_parts_named_by_dotted_path_exist(name):
    family = FAMILIES[name]
    for path in (family.preprocessing_fn, family.run_fn, family.tuner_fn):
        if path:
            assert callable(resolve(path)), path
    if family.evaluator_module:
        importlib.import_module(family.evaluator_module)
    assert family.run_fn.startswith(f"trainer_module.{name}.")


@pytest.mark.parametrize("name", NAMES)
def test_the_search_space_and_options_name_config_fields(name):
    family = FAMILIES[name]
    fields = {f.name for f in dataclasses.fields(type(family.config()))}
    assert family.tunable == bool(family.search_space)
    for axis in family.search_space:
        assert set(axis.fields) <= fields, axis
        assert axis.choices or axis.low < axis.high
    for option in family.options:
        assert option.config_field in fields, option
