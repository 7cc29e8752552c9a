"""Beam search against exhaustive search, its stopping rule, greedy decoding, and one sentence at
a time against a batch."""

import collections
import contextlib
import itertools

import keras
import numpy as np
import pytest
import tensorflow as tf
from keras import ops

from trainer_module.translator.config import END_ID, PAD_ID, START_ID, TranslatorConfig
from trainer_module.translator.decoding import (
    RANK_BLOCK,
    DecodingWeights,
    best_per_row,
    make_generate,
)
from trainer_module.translator.model import Translator

SOURCES = np.array([[4, 5, 6, 0], [7, 5, 0, 0], [6, 6, 4, 7]], "int32")
VOCAB = 7  # 0 [PAD], 1 [UNK], 2 [START], 3 [END], 4-6 words
WRITABLE = (1, 4, 5, 6)  # what a translation may hold before its [END]


class TableModel:
    """A stand-in translator whose next-token logits are a table lookup: by the source's first id
    and a running state (the sum of the tokens written so far, modulo VOCAB) that the decoding
    cache carries, so a search that reorders its cache wrongly decodes wrongly."""

    def __init__(self, table, end_bias=0.0):
        self.table = tf.constant(table + end_bias * np.eye(VOCAB)[END_ID], tf.float32)
        self.steps = 0  # decode_step calls (eager only)
        self.rows = []  # the rows each call decoded (eager only)

    def encode(self, source_ids, training=False):
        return tf.cast(source_ids[:, :1], tf.float32)[..., None], source_ids > 0, []

    def start_decoding(
        self, memory, source_mask, max_length=None, output_table=None, output_bias=None, repeats=1
    ):
        memory, source_mask = (tf.repeat(x, repeats, axis=0) for x in (memory, source_mask))
        return {
            "history": (tf.zeros([tf.shape(memory)[0]], tf.int32),),
            "memory": (tf.cast(memory[:, 0, 0], tf.int32),),
            "source_mask": source_mask,
        }

    def decode_step(self, token_ids, index, cache, shift=False):
        self.steps += 1
        if tf.executing_eagerly():
            self.rows.append(int(tf.shape(token_ids)[0]))
        state = (cache["history"][0] + token_ids[:, 0] * tf.cast(index > 0, tf.int32)) % VOCAB
        logits = tf.gather_nd(
            self.table, tf.stack([cache["memory"][0] % len(self.table.numpy()), state], axis=1)
        )
        return logits[:, None, :], {**cache, "history": (state,)}

    def score(self, source, tokens, length_penalty=0.0) -> float:
        """The search's ranking of a finished translation."""
        return self.log_probability(source, tokens) / ((5.0 + len(tokens)) / 6.0) ** length_penalty

    def log_probability(self, source, tokens) -> float:
        table = self.table.numpy()
        log_probs = table - np.log(np.exp(table).sum(-1, keepdims=True))
        row, state, total = source[0] % len(table), 0, 0.0
        for token in tokens:
            total += log_probs[row, state, token]
            state = (state + token) % VOCAB
        return total


def best_by_enumeration(model, source, max_length, length_penalty):
    """The best-ranked translation that ends with [END] within max_length tokens."""
    candidates = [
        words + (END_ID,)
        for n in range(max_length)
        for words in itertools.product(WRITABLE, repeat=n)
    ]
    return max(candidates, key=lambda tokens: model.score(source, tokens, length_penalty))


def small_model(target_words: int = 3) -> Translator:
    """A random 1+1-layer translator over 4 source and `target_words` target words."""
    keras.utils.set_random_seed(3)
    config = TranslatorConfig(
        source_vocab_size=4,
        target_vocab_size=target_words,
        max_source_length=4,
        max_target_length=5,
        max_decode_length=4,
        d_model=16,
        num_heads=2,
        ff_dim=32,
        encoder_layers=1,
        decoder_layers=1,
        dropout=0.0,
    )
    model = Translator(config)
    ids = np.ones((1, 2), dtype="int32")
    model({"source_ids": ids, "decoder_input_ids": ids})
    return model


def written(row) -> tuple:
    """Generated ids after [START], up to and including [END]; then only padding."""
    row = list(row)
    assert row[0] == START_ID
    end = row.index(END_ID) if END_ID in row else len(row) - 1
    assert all(t == PAD_ID for t in row[end + 1 :])
    return tuple(row[1 : end + 1])


@pytest.mark.parametrize(
    "length_penalty, stopping",
    [(0.0, "exact"), (0.6, "exact"), (2.0, "exact"), (0.0, "heuristic")],
)
@pytest.mark.parametrize("seed", range(4))
def test_a_beam_as_wide_as_every_prefix_finds_the_exhaustive_best(seed, length_penalty, stopping):
    """64 beams hold every open translation of up to 3 tokens, so the search must return
    exactly the best-ranked one that ends, wherever it stops: by the exact rule at any length
    penalty, and by the heuristic one where there is none (its bound is then exact)."""
    table = np.random.default_rng(seed).normal(0.0, 3.0, (4, VOCAB, VOCAB))
    model = TableModel(table, end_bias=-2.0)
    generate = make_generate(model, 3, 64, length_penalty, stopping=stopping)
    generated = generate(tf.constant(SOURCES)).numpy()
    for source, row in zip(SOURCES, generated):
        assert written(row) == best_by_enumeration(model, source, 3, length_penalty)


@pytest.mark.parametrize("beam_width", [1, 4])
def test_decoding_stops_once_every_sentence_is_decided(beam_width):
    """[END] is certain at once: one step decides every sentence, whatever max_decode_length."""
    model = TableModel(np.zeros((4, VOCAB, VOCAB)), end_bias=30.0)
    generated = make_generate(model, 20, beam_width)(tf.constant(SOURCES)).numpy()
    assert model.steps == 1
    assert generated[:, :2].tolist() == [[START_ID, END_ID]] * 3
    assert np.all(generated[:, 2:] == PAD_ID)


def test_width_one_is_greedy_step_by_step():
    model = small_model()
    generated = ops.convert_to_numpy(make_generate(model, 4, beam_width=1)(SOURCES))
    for source, row in zip(SOURCES, generated):
        prefix = [START_ID]
        while len(prefix) <= 4 and END_ID not in prefix:
            logits = ops.convert_to_numpy(
                model({"source_ids": source[None], "decoder_input_ids": np.array([prefix])})
            )
            logits[0, -1, [PAD_ID, START_ID]] = -np.inf
            prefix.append(int(logits[0, -1].argmax()))
        assert tuple(prefix[1:]) == written(row)


@pytest.mark.parametrize("beam_width", [pytest.param(1, marks=pytest.mark.slow), 4])
def test_a_sentence_decodes_the_same_alone_as_in_a_batch(beam_width):
    model = small_model()
    generate = tf.function(
        make_generate(model, 4, beam_width), input_signature=[tf.TensorSpec([None, None], tf.int32)]
    )
    together = generate(tf.constant(SOURCES)).numpy()
    for i, source in enumerate(SOURCES):
        np.testing.assert_array_equal(generate(tf.constant(source[None])).numpy()[0], together[i])


@pytest.mark.parametrize("beam_width", [1, 3])
def test_a_decided_sentence_leaves_the_batch_and_keeps_its_translation(beam_width):
    """Sources whose first id is 4 write [END] at once; the others write 4 5 6 then [END]: the
    first step decides the short ones, and the later steps decode the long one's rows alone."""
    model = TableModel(one_long_translation_table())
    generated = make_generate(model, 10, beam_width)(ONE_LONG_AMONG_SHORT).numpy()
    assert [written(row) for row in generated] == [(END_ID,), (4, 5, 6, END_ID), (END_ID,)]
    assert model.rows == [3 * beam_width] + [beam_width] * 3


# The sources of one_long_translation_table: the second writes 4 5 6 [END], the others [END].
ONE_LONG_AMONG_SHORT = tf.constant([[4, 5, 0, 0], [7, 5, 0, 0], [4, 4, 0, 0]], tf.int32)


def one_long_translation_table():
    """Next-token logits where [END] is certain, except for source row 3 (first id 7)."""
    table = np.full((4, VOCAB, VOCAB), -30.0)
    table[:, :, END_ID] = 30.0  # whatever was written, [END] is certain...
    table[3, 0, END_ID], table[3, 0, 4] = -30.0, 30.0  # ...but source row 3 (first id 7): 4,
    table[3, 4, END_ID], table[3, 4, 5] = -30.0, 30.0  # then 5 (state 4),
    table[3, 2, END_ID], table[3, 2, 6] = -30.0, 30.0  # then 6 (state (4 + 5) % 7 = 2)
    return table


@pytest.mark.parametrize("beam_width", [1, 2])
def test_the_length_penalty_lets_a_longer_translation_win_and_is_searched_for(beam_width):
    """[END] at once (probability ~0.52) against "4 5 [END]" (~0.48, then certain): the score
    alone prefers the short one; penalty 2 divides the long one's by (8/6)^2 and prefers it, and
    the search must keep looking after the short one has finished to find it."""
    table = np.full((VOCAB, VOCAB), -30.0)
    table[0, END_ID], table[0, 4] = 0.1, 0.0  # first token: [END] or 4
    table[4, 5] = 30.0  # after 4: 5 (state 4)
    table[(4 + 5) % VOCAB, END_ID] = 30.0  # after 4 5: [END]
    model = TableModel(np.repeat(table[None], 4, axis=0))
    for length_penalty, expected in ((0.0, (END_ID,)), (2.0, (4, 5, END_ID))):
        generated = make_generate(model, 6, beam_width, length_penalty)(tf.constant(SOURCES))
        assert [written(row) for row in generated.numpy()] == [expected] * len(SOURCES)


def first_token_table(end: float, four: float) -> np.ndarray:
    """A table whose first token is [END] with log-probability `end` or 4 with `four` (the
    other five ids share the rest), then "5 [END]" after 4, certainly."""
    rest = np.log((1.0 - np.exp(end) - np.exp(four)) / 5.0)
    table = np.full((VOCAB, VOCAB), -30.0)
    table[0, :] = rest
    table[0, END_ID], table[0, 4] = end, four
    table[4, 5] = 30.0  # after 4: 5 (state 4)
    table[(4 + 5) % VOCAB, END_ID] = 30.0  # after 4 5: [END] (state 2)
    return np.repeat(table[None], 4, axis=0)


@pytest.mark.parametrize("beam_width", [1, 2])
def test_the_heuristic_rule_stops_once_ending_next_would_not_win(beam_width):
    """[END] first scores -0.8; "4 5 [END]" scores -1.0, which penalty 1 divides by 8/6 to -0.75
    and prefers. The exact rule keeps decoding after the [END] (the open "4" could reach
    -1.0 / (45 / 6) = -0.13 at 40 tokens) and finds it in 3 steps. The heuristic one stops
    after the first step, since "4" ending next would score -1.0 / (7 / 6) = -0.86."""
    steps, found = {}, {}
    for stopping in ("exact", "heuristic"):
        model = TableModel(first_token_table(end=-0.8, four=-1.0))
        generate = make_generate(model, 40, beam_width, 1.0, stopping=stopping)
        found[stopping] = {written(row) for row in generate(tf.constant(SOURCES)).numpy()}
        steps[stopping] = model.steps
    assert found == {"exact": {(4, 5, END_ID)}, "heuristic": {(END_ID,)}}
    assert steps == {"exact": 3, "heuristic": 1}


@pytest.mark.parametrize(
    "stopping, expected", [("exact", (4, 5, END_ID)), ("heuristic", (END_ID,))]
)
def test_the_xla_compiled_search_stops_by_the_same_rule(stopping, expected):
    """The case above compiled by XLA, whose loop tests the rule after each step's index has
    moved on: the heuristic one must still bound by the next length (3 would not stop)."""
    model = TableModel(first_token_table(end=-0.8, four=-1.0))
    generate = make_generate(model, 40, 2, 1.0, jit_compile=True, stopping=stopping)
    assert {written(row) for row in generate(tf.constant(SOURCES)).numpy()} == {expected}


def test_an_unknown_stopping_rule_or_output_vocabulary_is_refused():
    with pytest.raises(ValueError, match="stopping must be one of"):
        TranslatorConfig(stopping="early")
    with pytest.raises(ValueError, match="output_vocabulary must be one of"):
        TranslatorConfig(output_vocabulary="english")


@pytest.mark.slow
@pytest.mark.parametrize("beam_width", [1, 3])
def test_the_xla_compiled_search_pads_to_a_bucket_and_returns_the_plain_search_ids(beam_width):
    """jit_compile: the batch is padded to the next power of two (copies of its first sentence)
    and cut back; the ids are the plain search's, for batch sizes on and off a bucket."""
    model = small_model()
    spec = [tf.TensorSpec([None, None], tf.int32)]
    plain = tf.function(make_generate(model, 4, beam_width, 0.6), input_signature=spec)
    compiled = tf.function(
        make_generate(model, 4, beam_width, 0.6, jit_compile=True, jit_compile_max_batch=8),
        input_signature=spec,
    )
    sources = np.concatenate([SOURCES, SOURCES[::-1], SOURCES[:1]])  # 7 sentences
    for rows in (1, 2, 3, 7):
        batch = tf.constant(sources[:rows])
        generated = compiled(batch).numpy()
        assert generated.shape == (rows, 5)
        np.testing.assert_array_equal(generated, plain(batch).numpy())


@pytest.mark.slow
def test_only_batches_up_to_the_limit_are_compiled_and_larger_ones_search_plainly():
    """jit_compile_max_batch: a batch of more sentences runs the plain search (XLA's CPU
    backend refuses large bfloat16 products) and returns the same ids; the compiled search is
    traced once per bucket that it ran, when called eagerly."""
    model = small_model()
    plain = make_generate(model, 4, 2, 0.6)
    generate = make_generate(model, 4, 2, 0.6, jit_compile=True, jit_compile_max_batch=2)
    sources = np.concatenate([SOURCES, SOURCES[::-1], SOURCES[:1]])  # 7 sentences
    for rows in (1, 2, 3, 7):
        batch = tf.constant(sources[:rows])
        np.testing.assert_array_equal(generate(batch).numpy(), plain(batch).numpy())
    assert generate.compiled_search.experimental_get_tracing_count() == 2  # buckets 1 and 2
    with pytest.raises(ValueError, match="jit_compile_max_batch must be 1 or more"):
        TranslatorConfig(jit_compile_max_batch=0)


def test_a_batch_over_the_compiled_limit_is_searched_with_shrinking_rows():
    """Over jit_compile_max_batch the search is the plain one, not XLA's fixed shapes: its
    decided sentences leave the batch (the case of the test above, batch 3 over a limit of 2)."""
    model = TableModel(one_long_translation_table())
    generate = make_generate(model, 10, 2, jit_compile=True, jit_compile_max_batch=2)
    generated = generate(ONE_LONG_AMONG_SHORT).numpy()
    assert [written(row) for row in generated] == [(END_ID,), (4, 5, 6, END_ID), (END_ID,)]
    assert model.rows == [6] + [2] * 3


def loop_body_ops(function) -> list:
    """The op types of the (one) while loop's body in a traced tf.function."""
    graph = function.get_concrete_function().graph
    (loop,) = [op for op in graph.get_operations() if op.type in ("While", "StatelessWhile")]
    library = {f.signature.name: f for f in graph.as_graph_def().library.function}
    return [node.op for node in library[loop.get_attr("body").name].node_def]


@pytest.mark.slow
def test_in_mixed_precision_the_search_casts_the_weights_once_and_decodes_the_same(monkeypatch):
    """weights_cast_once: the loop reads no weight (each is read, and cast, once before it)
    instead of every kernel at every step, and the translations are the same to the token."""
    from trainer_module.translator import decoding

    keras.mixed_precision.set_global_policy("mixed_bfloat16")
    try:
        model = small_model()
    finally:
        keras.mixed_precision.set_global_policy("float32")
    spec = [tf.TensorSpec([None, None], tf.int32)]
    once = tf.function(make_generate(model, 4, 2, 0.6), input_signature=spec)
    norms = [w for w in model.weights if not w._autocast]  # LayerNorm's float32 scales
    assert norms and len(norms) < len(model.weights)
    assert loop_body_ops(once).count("ReadVariableOp") == 0
    monkeypatch.setattr(decoding, "weights_cast_once", lambda *args: contextlib.nullcontext())
    every_step = tf.function(make_generate(model, 4, 2, 0.6), input_signature=spec)
    assert loop_body_ops(every_step).count("ReadVariableOp") > len(model.weights) // 2
    sources = tf.constant(SOURCES)
    np.testing.assert_array_equal(once(sources).numpy(), every_step(sources).numpy())


def weight_preparation(function) -> collections.Counter:
    """The casts and transposes of weights (read from a variable) in a traced search."""

    def of_a_weight(tensor) -> bool:
        while tensor.op.type in ("Cast", "Transpose", "Identity"):
            tensor = tensor.op.inputs[0]
        return tensor.op.type == "ReadVariableOp"

    graph = function.get_concrete_function().graph
    return collections.Counter(
        op.type
        for op in graph.get_operations()
        if op.type in ("Cast", "Transpose") and of_a_weight(op.inputs[0])
    )


def test_weights_prepared_once_spare_each_search_its_casts_and_transpose():
    """DecodingWeights (what an export stores): a mixed-precision model's kernels already in
    bfloat16 and the tied output table already transposed, so that a search casts and
    transposes no weight, and translates the same to the token."""
    keras.mixed_precision.set_global_policy("mixed_bfloat16")
    try:
        model = small_model()
    finally:
        keras.mixed_precision.set_global_policy("float32")
    prepared = DecodingWeights(model)
    kernels = [w for w in model.weights if w._autocast]
    assert len(prepared.copies) == len(kernels)
    assert {copy.dtype for copy in prepared.copies} == {tf.bfloat16}
    _, width = model.target_embedding.embedding.embeddings.shape
    assert tuple(prepared.output_table.shape) == (width, RANK_BLOCK)  # padded: VOCAB < 64
    spec = [tf.TensorSpec([None, None], tf.int32)]
    each_search = tf.function(make_generate(model, 4, 2, 0.6), input_signature=spec)
    once = tf.function(make_generate(model, 4, 2, 0.6, weights=prepared), input_signature=spec)
    assert weight_preparation(each_search) == {"Cast": len(kernels), "Transpose": 1}
    assert weight_preparation(once) == {}
    sources = tf.constant(SOURCES)
    np.testing.assert_array_equal(once(sources).numpy(), each_search(sources).numpy())


@pytest.mark.parametrize("beam_width", [1, 4])
def test_a_search_over_the_ids_it_may_write_is_the_whole_search_with_the_others_never_likely(
    beam_width,
):
    """DecodingWeights with output_ids keeps those columns of the output table alone: a step's
    ranking and normalization are over them, so the search writes exactly what the whole
    model writes once every other id's bias makes it never likely (its probability 0), and
    only those ids; compiled by XLA too."""
    model = small_model()  # ids 0-3 reserved, 4-6 the three target words
    bias = model.output_bias.numpy()
    bias[END_ID] -= 5.0  # words before [END]
    model.output_bias.assign(bias)
    sources = tf.constant(np.concatenate([SOURCES, [[4, 5, 6, 7], [7, 7, 4, 0], [5, 0, 0, 0]]]))
    whole = make_generate(model, 4, beam_width, 0.6, weights=DecodingWeights(model))(sources)
    words = collections.Counter(int(i) for i in whole.numpy().ravel() if i in WRITABLE[1:])
    excluded = words.most_common(1)[0][0]  # the restriction changes what is written
    allowed = [i for i in range(VOCAB) if i != excluded]
    prepared = DecodingWeights(model, allowed)
    restricted = make_generate(model, 4, beam_width, 0.6, weights=prepared)(sources).numpy()
    compiled = make_generate(  # its 6 sentences compiled, over the default limit
        model, 4, beam_width, 0.6, jit_compile=True, weights=prepared, jit_compile_max_batch=8
    )
    np.testing.assert_array_equal(compiled(sources).numpy(), restricted)  # XLA's fixed shapes
    model.output_bias.assign(np.where(np.arange(VOCAB) == excluded, -1e9, bias))
    never_likely = make_generate(model, 4, beam_width, 0.6, weights=DecodingWeights(model))
    np.testing.assert_array_equal(restricted, never_likely(sources).numpy())
    assert excluded not in restricted


def test_the_ranking_in_blocks_gives_top_k_and_the_log_probabilities_exactly_ties_included():
    """best_per_row over a width that is a multiple of RANK_BLOCK ranks in two stages (the
    blocks with the largest logits, then their columns): the same columns as tf.math.top_k,
    ties to the lower column (within a block, across blocks, at the k-th place), and the same
    log-probabilities as top_k less tf.reduce_logsumexp, with padding columns of -inf."""
    rng = np.random.default_rng(0)
    k, width = 7, 20 * RANK_BLOCK
    logits = rng.normal(size=(6, width)).astype("float32")
    logits[0, [5, 9, 900]] = logits[0, 700] = 9.0  # a four-way tie for the best
    logits[1, [70, 71, 3 * RANK_BLOCK, 1100]] = 8.0  # ties within and across blocks
    logits[1, :6] = 10.0  # ...at the k-th place: two of the four are kept
    logits[2, -RANK_BLOCK // 2 :] = -np.inf  # an export's padding
    logits[3] = 1.0  # every column tied
    logits[4, ::RANK_BLOCK] = 5.0  # each block's largest in its first column
    expected_best, expected_ids = tf.math.top_k(logits, k)
    expected = expected_best - tf.reduce_logsumexp(logits, axis=1, keepdims=True)
    ranked = tf.function(
        lambda x: best_per_row(x, k), input_signature=[tf.TensorSpec([None, width])]
    )
    scores, ids = ranked(tf.constant(logits))
    np.testing.assert_array_equal(ids.numpy(), expected_ids.numpy())
    np.testing.assert_array_equal(scores.numpy(), expected.numpy())
    # It ranked in blocks: top_k over the blocks' maxima and over k blocks' columns, never over
    # a whole row (tf.sort of the k blocks is a top_k too).
    graph = ranked.get_concrete_function().graph
    widths = {op.inputs[0].shape[-1] for op in graph.get_operations() if op.type == "TopKV2"}
    assert widths == {width // RANK_BLOCK, k * RANK_BLOCK, k}


@pytest.mark.parametrize("beam_width", [1, 4])
def test_an_exports_padded_table_ranked_in_blocks_decodes_as_the_keras_model(beam_width):
    """DecodingWeights pads the output table to a multiple of RANK_BLOCK columns whose logits are
    -inf, wide enough here (1,000 ids) for each step to rank in blocks: the search writes
    exactly what the model's own search (its unpadded table, ranked by top_k) writes."""
    model = small_model(target_words=996)
    prepared = DecodingWeights(model)
    assert tuple(prepared.output_table.shape) == (16, 1024)
    assert np.all(np.isneginf(prepared.output_bias.numpy()[1000:]))
    more = [[4, 5, 6, 7], [7, 7, 4, 0], [5, 0, 0, 0]]
    sources = tf.constant(np.concatenate([SOURCES, more]), tf.int32)
    spec = [tf.TensorSpec([None, None], tf.int32)]
    plain = tf.function(make_generate(model, 4, beam_width, 0.6), input_signature=spec)
    padded = tf.function(
        make_generate(model, 4, beam_width, 0.6, weights=prepared), input_signature=spec
    )
    # Ranked in blocks: two more top_k (the blocks' maxima, and their sort) in each step.
    assert loop_body_ops(padded).count("TopKV2") == loop_body_ops(plain).count("TopKV2") + 2
    plain, padded = plain(sources).numpy(), padded(sources).numpy()
    np.testing.assert_array_equal(padded, plain)
    assert len({tuple(row) for row in plain}) > 1  # the sentences' translations differ
