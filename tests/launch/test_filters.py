"""Vertex ML Metadata filters over recorded artifacts: the ones TFX compiles, and the grammar
around them."""

import pytest

from pipeline.launch.filters import FilterError, parse, select


def artifact(sequence, title, state="LIVE", **metadata):
    return {
        "name": f"projects/local/locations/local/metadataStores/default/artifacts/{sequence}",
        "sequence": sequence,
        "schema_title": title,
        "state": state,
        "uri": f"/root/{sequence}",
        "create_time": f"2026-11-29T10:00:0{sequence}+00:00",
        "metadata": metadata,
        "contexts": ["imdb-text-encoder"],
    }


BLESSINGS = [
    artifact(1, "tfx.ModelBlessing", blessed=1.0, current_model_id="m1"),
    artifact(2, "tfx.ModelBlessing", blessed=0.0, current_model_id="m2"),
    artifact(3, "tfx.ModelBlessing", blessed=1.0, current_model_id="m3"),
    artifact(4, "tfx.ModelBlessing", state="PENDING", blessed=1.0),
    artifact(5, "tfx.Model"),
]
# What TFX's compiler writes for LatestBlessedModelStrategy (see a compiled job's resolver).
LATEST_BLESSING = (
    'schema_title="tfx.ModelBlessing" AND state=LIVE AND metadata.blessed.number_value=1'
)


def test_the_latest_blessing_filter_picks_the_newest_live_blessed_one():
    (found,) = select(BLESSINGS, LATEST_BLESSING)
    assert found["sequence"] == 3
    assert [a["sequence"] for a in select(BLESSINGS, LATEST_BLESSING, limit=0)] == [3, 1]


def test_the_model_filter_matches_the_blessings_model_by_name():
    name = BLESSINGS[4]["name"]
    query = f'schema_title="tfx.Model" AND state=LIVE AND name="{name}"'
    assert select(BLESSINGS, query) == [BLESSINGS[4]]
    assert select(BLESSINGS, 'schema_title="tfx.Model" AND name="elsewhere"') == []


@pytest.mark.parametrize(
    "query, expected",
    [
        ('metadata.current_model_id.string_value="m1"', [1]),
        ('metadata."current_model_id".string_value != "m1"', [5, 4, 3, 2]),
        ("metadata.blessed.number_value >= 1 AND NOT state=PENDING", [3, 1]),
        ('(schema_title="tfx.Model" OR metadata.blessed.number_value=0)', [5, 2]),
        (
            'in_context("projects/1/locations/l/metadataStores/default/contexts/imdb-text-encoder")'
            ' AND schema_title="tfx.Model"',
            [5],
        ),
        ('in_context("projects/1/locations/l/metadataStores/default/contexts/other")', []),
        ('create_time > "2026-11-29T10:00:03+00:00"', [5, 4]),
        # A string compared as a number matches nothing (Vertex AI's typed values).
        ("metadata.current_model_id.number_value=1", []),
    ],
)
def test_the_grammar_around_them(query, expected):
    assert [a["sequence"] for a in select(BLESSINGS, query, limit=0)] == expected


@pytest.mark.parametrize(
    "query, problem",
    [
        ('schema_title="tfx.Model" AND', "ends too soon"),
        ('owner="me"', "unknown field 'owner'"),
        ("metadata.blessed.int_value=1", "unknown field"),
        ("(state=LIVE", "not closed"),
        ("state=LIVE extra", "unexpected 'extra'"),
        ("state ~ LIVE", "cannot read"),
    ],
)
def test_a_filter_it_cannot_read_is_an_error_naming_the_problem(query, problem):
    with pytest.raises(FilterError, match=problem):
        parse(query)
