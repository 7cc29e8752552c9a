import pytest
import tensorflow as tf

from lab.local_transform import analyze_and_transform
from tests.conftest import pair_spec
from trainer_module.translator.preprocessing import (
    SOURCE_VOCABULARY,
    TARGET_VOCABULARY,
    output_ids,
    preprocessing_fn,
    shift_target,
    vocabulary_sizes,
    vocabulary_tokens,
)

CONFIG = {
    "tokenizer": "word",
    "source_vocab_size": 100,
    "target_vocab_size": 3,
    "min_frequency": 1,
    "shared_vocabulary": False,
    "max_source_length": 4,
    "max_target_length": 5,
}


def transform(rows, tmp_path, **overrides):
    return analyze_and_transform(
        rows, preprocessing_fn, {**CONFIG, **overrides}, str(tmp_path), pair_spec()
    )


def test_shift_puts_start_before_and_end_after_the_target():
    ids = tf.ragged.constant([[10, 11, 12], [20], [30, 31, 32, 33, 34, 35]], dtype=tf.int64)
    decoder_input, target = shift_target(ids, 5)
    assert decoder_input.numpy().tolist() == [
        [2, 10, 11, 12, 0],
        [2, 20, 0, 0, 0],
        [2, 30, 31, 32, 33],
    ]
    assert target.numpy().tolist() == [[10, 11, 12, 3, 0], [20, 3, 0, 0, 0], [30, 31, 32, 33, 3]]


def test_exact_ids_vocabularies_unk_truncation_and_padding(tmp_path):
    rows = [
        {"source": "Ein Mann läuft.", "target": "A man runs."},
        {"source": "Ein Hund", "target": "A dog runs, a man runs"},
        {"source": "Zwei Männer laufen im Park.", "target": "Two men run."},
    ]
    transformed, output = transform(rows, tmp_path)
    # Target vocabulary (top 3 by frequency): runs (4), a (3), man (2) -> ids 4, 5, 6 after the
    # four reserved ids; every other word is [UNK] = 1.
    assert vocabulary_tokens(output, TARGET_VOCABULARY) == [
        "[PAD]",
        "[UNK]",
        "[START]",
        "[END]",
        "runs",
        "a",
        "man",
    ]
    first, second, third = transformed
    assert first["decoder_input_ids"].tolist() == [2, 5, 6, 4, 1]  # [START] a man runs .
    assert first["target_ids"].tolist() == [5, 6, 4, 1, 3]  # a man runs . [END]
    # Truncated to 4 target tokens + [END], and [START] + the same 4.
    assert second["target_ids"].tolist() == [5, 1, 4, 1, 3]
    assert second["decoder_input_ids"].tolist() == [2, 5, 1, 4, 1]
    assert third["target_ids"].tolist() == [1, 1, 1, 1, 3]
    # Source: its own vocabulary, truncated to 4 and 0-padded.
    source_vocabulary = vocabulary_tokens(output, SOURCE_VOCABULARY)
    ids = {w: i for i, w in enumerate(source_vocabulary)}
    assert first["source_ids"].tolist() == [ids["ein"], ids["mann"], ids["läuft"], ids["."]]
    assert second["source_ids"].tolist() == [ids["ein"], ids["hund"], 0, 0]
    assert len(third["source_ids"]) == 4
    # The BLEU reference: the whole target as written, untruncated (metrics.py tokenizes it).
    assert second["reference"] == b"A dog runs, a man runs"
    assert [t["source_length_bucket"] for t in transformed] == [b"1-9"] * 3
    # What the Trainer sets in the config: the words each vocabulary kept.
    assert vocabulary_sizes(output) == {
        "source_vocab_size": len(source_vocabulary) - 4,
        "target_vocab_size": 3,
    }


@pytest.mark.slow
def test_shared_vocabulary_covers_both_languages(tmp_path):
    rows = [{"source": "Hund Hund", "target": "dog"}]
    transformed, output = transform(rows, tmp_path, shared_vocabulary=True)
    tokens = vocabulary_tokens(output, SOURCE_VOCABULARY)
    assert tokens == vocabulary_tokens(output, TARGET_VOCABULARY)
    assert tokens[4:] == ["hund", "dog"]
    assert transformed[0]["source_ids"].tolist() == [4, 4, 0, 0]
    assert transformed[0]["target_ids"].tolist() == [5, 3, 0, 0, 0]
    assert vocabulary_sizes(output) == {"source_vocab_size": 2, "target_vocab_size": 2}


WORDPIECE = {
    **CONFIG,
    "tokenizer": "wordpiece",
    "source_vocab_size": 100,
    "target_vocab_size": 100,
    "max_source_length": 16,
    "max_target_length": 16,
}
PAIRS = [
    {"source": "Ein Mann fährt Rad.", "target": "A man rides a bike."},
    {"source": "Ein Hund rennt.", "target": "A dog runs."},
    {"source": "Zwei Männer fahren.", "target": "Two men ride bikes."},
] * 3


@pytest.fixture(scope="module")
def wordpieces(tmp_path_factory):
    """(transformed rows, TFTransformOutput) of PAIRS with WordPiece vocabularies."""
    return transform(PAIRS, tmp_path_factory.mktemp("wordpiece"), **WORDPIECE)


def test_wordpiece_ids_keep_case_and_mark_attached_pieces(wordpieces):
    transformed, output = wordpieces
    pieces = vocabulary_tokens(output, TARGET_VOCABULARY)
    assert pieces[:4] == ["[PAD]", "[UNK]", "[START]", "[END]"]
    assert "A" in pieces and "##." in pieces  # case kept; the full stop joins its word
    first = transformed[0]
    # Exact ids: frequent words are pieces of their own, the full stop kept on its word.
    assert first["target_ids"].tolist()[:7] == [5, 25, 28, 7, 22, 3, 0]
    assert [pieces[i] for i in first["target_ids"][:6]] == [
        "A",
        "man",
        "rides",
        "a",
        "bike.",
        "[END]",
    ]
    source_pieces = vocabulary_tokens(output, SOURCE_VOCABULARY)
    assert first["source_ids"].tolist()[:5] == [22, 24, 29, 26, 0]
    assert [source_pieces[i] for i in first["source_ids"][:4]] == ["Ein", "Mann", "fährt", "Rad."]
    # A word never seen whole is spelled from pieces, the first without `##`, the rest with.
    unseen = output.transform_features_layer()(
        {"source": tf.constant(["Männerrad."]), "target": tf.constant([""])}
    )["source_ids"]
    spelled = [source_pieces[i] for i in unseen.numpy()[0] if i]
    assert len(spelled) > 1 and not spelled[0].startswith("##")
    assert all(p.startswith("##") for p in spelled[1:])
    assert "".join(p.removeprefix("##") for p in spelled) == "Männerrad."
    written = [pieces[i] for i in first["target_ids"] if i > 3]
    assert (
        "".join(p if p.startswith("##") else " " + p for p in written).replace("##", "").strip()
        == "A man rides a bike."
    )
    assert first["decoder_input_ids"][0] == 2 and 3 in first["target_ids"].tolist()
    assert first["reference"] == b"A man rides a bike."
    assert vocabulary_sizes(output)["target_vocab_size"] == len(pieces) - 4 <= 100


@pytest.mark.slow
def test_a_shared_vocabulary_lets_the_search_write_the_ids_that_targets_hold(tmp_path):
    """Exactly the reserved ids and the pieces of the English side: the German-only pieces of
    the joint vocabulary are never written. Separate vocabularies: every target id."""
    transformed, output = transform(
        PAIRS, tmp_path / "shared", **{**WORDPIECE, "shared_vocabulary": True}
    )
    pieces = vocabulary_tokens(output, TARGET_VOCABULARY)
    held = {int(i) for row in transformed for i in row["target_ids"]}
    assert output_ids(output) == sorted(held | {0, 1, 2, 3})
    assert [pieces[i] for i in output_ids(output)[4:]] == sorted(
        ["A", "a", "Two", "bike.", "bikes.", "dog", "man", "men", "ride", "rides", "runs."],
        key=pieces.index,
    )
    assert "Mann" in pieces and "Mann" not in [pieces[i] for i in output_ids(output)]
    _, separate = transform(PAIRS, tmp_path / "separate", **WORDPIECE)
    assert output_ids(separate) is None
    # Whole words (--set tokenizer=word): the same, through the word vocabulary.
    transformed, words = transform(
        PAIRS, tmp_path / "words", shared_vocabulary=True, max_target_length=12
    )
    held = {int(i) for row in transformed for i in row["target_ids"]}
    assert output_ids(words) == sorted(held | {0, 1, 2, 3}) and len(held) > 4
    # Targets cut at max_target_length: their last words' ids are writable still.
    transformed, cut = transform(PAIRS, tmp_path / "cut", shared_vocabulary=True)
    held = {int(i) for row in transformed for i in row["target_ids"]}
    assert set(output_ids(cut)) > held | {0, 1, 2, 3} and output_ids(cut) == output_ids(words)


def test_the_learner_is_deterministic_and_keeps_the_reserved_tokens_first():
    """Whatever order tf.Transform's analyzers hand it the word counts in."""
    from trainer_module.translator.wordpiece import learn

    counts = [("bike.", 3), ("bikes", 2), ("A", 5), ("man", 4), ("rides", 1)]
    first = learn(counts, 30)
    assert first == learn(list(reversed(counts)), 30)
    assert first[:4] == ["[PAD]", "[UNK]", "[START]", "[END]"]
    assert {"A", "##."} <= set(first)
    # Many rare words: the vocabulary still fits the size asked for (reserved tokens aside).
    syllables = ["ka", "lo", "mi", "ne", "su", "ta", "ri", "po"]
    rare = [
        (a + b + c, 1 + (i % 3))
        for i, (a, b, c) in enumerate(
            (a, b, c) for a in syllables for b in syllables for c in syllables
        )
    ]
    assert len(rare) == 512 and len(learn(rare, 60)) <= 60 + 4


def test_wordpiece_round_trip_gives_the_text_back(wordpieces):
    from trainer_module.translator import wordpiece

    _, output = wordpieces
    path = output.vocabulary_file_by_name(TARGET_VOCABULARY)
    texts = ["A man rides a bike.", "Two  men run.", " A dog rides bikes. "]
    ids = wordpiece.tokenize(wordpiece.split_words(tf.constant(texts)), path)
    pieces = tf.gather(tf.constant(vocabulary_tokens(output, TARGET_VOCABULARY)), ids)
    assert [t.decode() for t in wordpiece.detokenize(pieces).numpy()] == [
        "A man rides a bike.",
        "Two men run.",
        "A dog rides bikes.",
    ]  # whitespace normalized
