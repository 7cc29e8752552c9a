"""Beam search (greedy at width 1) over the translator's cached decoding steps, in the graph.

Each step decodes one position for each of a sentence's `beam_width` open hypotheses (the
key/value cache), adds the token log-probabilities to their scores and ranks the continuations.
A continuation that writes [END] among the best `beam_width` is a finished translation: the
sentence keeps its best one, ranked by the score divided by the length penalty
((5 + tokens) / 6) ** length_penalty (Wu et al., 2016; 0 ranks by the score alone, which favours
short translations). The best `beam_width` continuations that do not end stay open. A sentence
is decided (`stopping` "exact") once no open hypothesis can overtake its best finished one:
scores only fall, so an open score divided by the penalty at max_decode_length bounds all it
can reach. With `stopping` "heuristic" (akin to Hugging Face's default early stopping), once no
open hypothesis would overtake it by ending at the next token: the penalty at the next length
in place of the longest, which decides the same at length_penalty 0, and sooner above it (a
hypothesis may still gain from growing longer, so the translation can differ). A decided
sentence leaves the batch (its rows are dropped from the hypotheses and the cache), and
decoding stops when every sentence is decided or after max_decode_length tokens; a sentence
with no finished translation then gives its best open one. At width 1 this is greedy decoding.

Why not KerasHub's BeamSampler (which this replaced; `benchmarks/translation_decoding.py`
measures both): it reorders every cache tensor with `keras.ops.take_along_axis`, which
TensorFlow runs as an element-wise gather over indices broadcast to the tensor's whole shape,
keeps finished hypotheses in the beam, and runs until every hypothesis of every sentence has
written [END]. Here a reorder is a row gather of the self-attention history alone (the encoder's
keys and values are the same for every beam of a sentence), and the stopping rule above ends as
soon as the result is known.
"""

import contextlib
from typing import Optional

import keras
import tensorflow as tf

from trainer_module import compat
from trainer_module.translator.config import END_ID, PAD_ID, START_ID, TranslatorConfig

NEVER = -1.0e9  # a log-probability no search keeps
# The decoding cache's entries with a row per hypothesis (a search reorders them).
PER_ROW = ("history", "memory", "source_mask")


def make_generate(
    model,
    max_decode_length: int,
    beam_width: int,
    length_penalty: float = 0.0,
    jit_compile: bool = False,
    weights: Optional["DecodingWeights"] = None,
    stopping: str = "exact",
    jit_compile_max_batch: int = TranslatorConfig.jit_compile_max_batch,
):
    """Returns generate: (B, S) source ids -> (B, max_decode_length + 1) ids: [START], the
    tokens, [END], padding.

    weights: the model's weights as the search reads them, prepared once (an export's): else
    each search reads, casts and transposes them itself (weights_cast_once).

    stopping: when a sentence is decided, "exact" or "heuristic" (the module docstring).

    jit_compile: the search of a batch of up to `jit_compile_max_batch` sentences is compiled
    by XLA, which fuses a step's many small ops (a larger batch runs the plain search). XLA
    compiles a program per input shape, so the batch is padded to the next power of two with
    copies of its first sentence (which are decided when it is, so they never lengthen the
    search) and cut back after: one compilation per bucket, not per batch size. Only small
    batches: their steps cost the ops' overheads that XLA removes (one sentence at beam 4 ran
    1.7x faster, on the Intel AMX machine), a large batch's steps their arithmetic, which
    TensorFlow's own kernels do as fast or faster in bfloat16, and XLA's CPU backend refuses
    a bfloat16 product beyond a few rows ("unsupported operand type BF16 in op dot": the base
    preset's batches of eight and more there). docs/benchmarks/translation.md.
    """

    def search(source_ids, fixed_shapes=False):
        with weights_cast_once(model, weights):
            return beam_search(
                model,
                source_ids,
                max_decode_length,
                beam_width,
                length_penalty,
                fixed_shapes,
                weights.read_output_table() if weights is not None else None,
                stopping,
                *(weights.read_output_vocabulary() if weights is not None else ()),
            )

    if not jit_compile:
        return search
    compiled = tf.function(
        lambda source_ids: search(source_ids, fixed_shapes=True), jit_compile=True, autograph=False
    )

    def generate(source_ids):
        rows = tf.shape(source_ids)[0]
        powers = 2 ** tf.range(31)
        bucket = tf.reduce_min(tf.where(powers >= rows, powers, powers[-1]))

        def compiled_search():
            padding = tf.repeat(source_ids[:1], bucket - rows, axis=0)
            return compiled(tf.concat([source_ids, padding], axis=0))[:rows]

        return tf.cond(rows <= jit_compile_max_batch, compiled_search, lambda: search(source_ids))

    generate.compiled_search = compiled  # type: ignore[attr-defined]  # traced once per bucket
    return generate


def float_weights(model) -> list:
    """The weights that a Keras model's layers read as floats, in model.weights' order ([]
    for anything else: tests also decode tables)."""
    if getattr(model, "compute_dtype", None) is None:
        return []
    return [v for v in model.weights if keras.backend.is_float_dtype(v.dtype)]


def as_read(variable, dtype):
    """A variable's value as its layer uses it: cast to the compute dtype where Keras autocasts
    it (a mixed-precision model's kernels), else as stored (LayerNorm's float32 scales)."""
    value = tf.convert_to_tensor(variable.value)
    return tf.cast(value, dtype) if compat.autocasts(variable) else value


@contextlib.contextmanager
def weights_cast_once(model, weights: Optional["DecodingWeights"] = None):
    """Inside: the model's layers read each weight as a tensor read once on entry, and those
    that they cast to the compute dtype (mixed precision) cast once, instead of reading (and
    casting) the variable at every use: in a decoding loop, at every step (the casts were about
    a fifth of a step's time, measured at batch 1). The same values: a cast rounds alike
    wherever it runs. With `weights` (prepared at export), the casts are already done."""
    scope = keras.StatelessScope()
    # StatelessScope's constructor would convert each value back to the variable's dtype.
    if weights is not None:
        scope.state_mapping.update(weights.read(model))
    else:
        scope.state_mapping.update(
            {id(v): as_read(v, model.compute_dtype) for v in float_weights(model)}
        )
    with scope:
        yield


class DecodingWeights(tf.Module):
    """A model's weights as its search reads them, prepared once when the model is exported:
    each weight that the layers cast (a mixed-precision model's kernels) stored cast to the
    compute dtype, and the tied output table stored transposed (and padded for the ranking in
    blocks, best_per_row, to a multiple of RANK_BLOCK columns). A request then reads them,
    without a copy, instead of casting every kernel and transposing the table (memory traffic
    of the model's size per request: profiled on the AVX2 EPYC, about 10 ms of op time in
    bfloat16, a step or two of one sentence). The stored copies take the compute dtype's bytes
    per parameter in the SavedModel."""

    def __init__(self, model, output_ids=None):
        """output_ids: the ids that the search may write, sorted (a tied model's; None: all).
        The stored table then holds their columns alone, beside their biases and the ids."""
        super().__init__(name="decoding_weights")
        dtype = model.compute_dtype
        weights = float_weights(model)
        # Positions in float_weights(model) of the weights stored cast, and their copies.
        self._positions = tuple(
            i for i, v in enumerate(weights) if compat.autocasts(v) and v.dtype != dtype
        )
        self.copies = [  # tracked: saved with the model
            tf.Variable(as_read(weights[i], dtype), trainable=False, name=weights[i].name)
            for i in self._positions
        ]
        self.output_table = self.output_bias = self.output_ids = None
        if model.output_projection is None:  # tied output embedding
            table = model._output_table(dtype)
            bias = tf.convert_to_tensor(model.output_bias.value)
            if output_ids is not None:
                ids = tf.constant(output_ids, tf.int32)
                table, bias = tf.gather(table, ids, axis=1), tf.gather(bias, ids)
            else:
                ids = tf.range(table.shape[1])
            # The table's columns that are ids (the search ranks no more than their number).
            self.output_ids = tf.Variable(ids, trainable=False, name="output_ids")
            # Padded for a step's ranking in blocks (best_per_row).
            table, bias = pad_output_columns(table, bias)
            self.output_table = tf.Variable(table, trainable=False, name="output_table")
            self.output_bias = tf.Variable(bias, trainable=False, name="output_bias")

    def read_output_table(self):
        """The transposed output table (D, V) as a tensor, padded to a multiple of RANK_BLOCK
        columns, or None (an untied projection)."""
        return None if self.output_table is None else tf.convert_to_tensor(self.output_table)

    def read_output_vocabulary(self) -> tuple:
        """(the ids the search may write (V,), the output table's biases, padded as it is), or
        (None, None): an untied projection, whose columns are every id."""
        if self.output_ids is None:
            return None, None
        return tf.convert_to_tensor(self.output_ids), tf.convert_to_tensor(self.output_bias)

    def read(self, model) -> dict:
        """id(weight) -> its value for the search: the stored copy, or the weight itself."""
        copies = dict(zip(self._positions, self.copies))
        return {
            id(v): tf.convert_to_tensor(copies[i])
            if i in copies
            else as_read(v, model.compute_dtype)
            for i, v in enumerate(float_weights(model))
        }


# The width of the blocks that best_per_row ranks a step's logits in; an export pads its output
# table to a multiple of it (DecodingWeights).
RANK_BLOCK = 64


def best_per_row(logits, k: int, blocks: bool = True):
    """(R, V) logits -> the k best of each row as log-probabilities (R, k), best first, and
    their columns (R, k): tf.math.top_k's, ties to the lower column, less the row's
    log-sum-exp.

    Where V is a multiple of RANK_BLOCK (an export's padded table), in two stages: the largest
    logit of each block of RANK_BLOCK columns, the k blocks with the largest, then the k best
    among those blocks' columns, which hold every one of the row's k best (a column outside
    them ranks below the largest of each). TensorFlow's CPU top_k compares every logit against
    the k kept so far; a block's maximum is a vectorised reduction. At batch 64 and beam 4 (256
    rows of the 9,600-column table, float32, one thread, the AVX2 EPYC) top_k and the
    log-sum-exp took 17.7 ms of a step of about 100, the two stages 8.0
    (`benchmarks/translation_decoding.py --ranking`, docs/benchmarks/translation.md).
    The blocks' maxima also give each row's largest logit, the log-sum-exp's first pass.
    blocks=False (an XLA-compiled search, which fuses the plain form): top_k alone."""
    with tf.name_scope("ranking"):  # as benchmarks/translation_decoding.py --profile files it
        return _best_per_row(logits, k, blocks)


def _best_per_row(logits, k: int, blocks: bool):
    columns = logits.shape[1]
    if not blocks or columns is None or columns % RANK_BLOCK or columns // RANK_BLOCK < 2 * k:
        best, ids = tf.math.top_k(logits, k)
        return best - tf.reduce_logsumexp(logits, axis=1, keepdims=True), ids
    grouped = tf.reshape(logits, [-1, columns // RANK_BLOCK, RANK_BLOCK])
    block_max = tf.reduce_max(grouped, axis=2)  # (R, V / RANK_BLOCK)
    _, chosen = tf.math.top_k(block_max, k)
    chosen = tf.sort(chosen, axis=1)  # in column order: ties still go to the lower column
    candidates = tf.reshape(tf.gather(grouped, chosen, batch_dims=1), [-1, k * RANK_BLOCK])
    best, at = tf.math.top_k(candidates, k)
    ids = tf.gather(chosen, at // RANK_BLOCK, batch_dims=1) * RANK_BLOCK + at % RANK_BLOCK
    # As tf.reduce_logsumexp computes it, its maximum from the blocks'.
    largest = tf.reduce_max(block_max, axis=1, keepdims=True)
    largest = tf.where(tf.math.is_finite(largest), largest, tf.zeros_like(largest))
    log_sum = tf.math.log(tf.reduce_sum(tf.exp(logits - largest), axis=1, keepdims=True))
    return best - (log_sum + largest), ids


def pad_output_columns(table, bias):
    """A (D, V) output table and its (V,) biases with zero columns and biases of -inf added up
    to a multiple of RANK_BLOCK columns: their logits are -inf, which no search ranks and the
    log-sum-exp counts as nothing."""
    extra = -table.shape[1] % RANK_BLOCK
    table = tf.pad(table, [[0, 0], [0, extra]])
    bias = tf.pad(tf.cast(bias, tf.float32), [[0, extra]], constant_values=float("-inf"))
    return table, bias


def gather_rows(tensors, rows):
    """Every tensor of a structure, its rows (first axis) gathered by `rows`."""
    return tf.nest.map_structure(lambda x: tf.gather(x, rows), tensors)


def beam_search(
    model,
    source_ids,
    max_decode_length: int,
    beam_width: int,
    length_penalty: float = 0.0,
    fixed_shapes: bool = False,
    output_table=None,
    stopping: str = "exact",
    output_ids=None,
    output_bias=None,
):
    """See the module docstring. Rows are sentence-major: row b * beam_width + k is beam k of
    sentence b. The self-attention cache grows by a position per step, so that a step copies
    and reorders only the positions decoded so far; with `fixed_shapes` (XLA) it is
    max_decode_length + 1 slots from the start. `output_table`: a tied model's output
    projection already transposed (DecodingWeights), with `output_bias` its biases and
    `output_ids` (sorted) the ids of its columns, padded for best_per_row's blocks with
    columns that are no ids. Those may be a subset of the ids: a step ranks and normalizes
    over the ids that the search may write (a shared vocabulary's pieces never seen in a
    target are left out, and the projection that is a third of a step's time shrinks with
    them).

    A decided sentence leaves the batch: its rows are dropped from the hypotheses and the cache
    (`active` holds the sentences still searched), so that a batch's short sentences stop
    costing steps while its longest is decoded. Not with `fixed_shapes`, where every sentence
    runs until all are decided."""
    k, length = beam_width, max_decode_length + 1
    memory, source_mask, _ = model.encode(source_ids, training=False)
    batch = tf.shape(source_ids)[0]
    rows = batch * k
    cache = model.start_decoding(
        memory,
        source_mask,
        length if fixed_shapes else None,
        output_table=output_table,
        output_bias=output_bias,
        repeats=k,
    )
    ids = tf.concat(
        [tf.fill([rows, 1], START_ID), tf.fill([rows, max_decode_length], PAD_ID)], axis=1
    )
    # Every beam of a sentence starts as the same [START]: keep only the first one open.
    scores = tf.tile(tf.constant([0.0] + [NEVER] * (k - 1)), [batch])
    best = tf.fill([batch], tf.float32.min)  # each sentence's best finished, penalised
    best_ids = tf.fill([batch, length], PAD_ID)
    active = tf.range(batch)  # the sentences still searched, in row order
    positions = tf.range(length)

    def penalty(tokens):
        return ((5.0 + tf.cast(tokens, tf.float32)) / 6.0) ** length_penalty

    def undecided_among(scores, best_of_active, index):
        """(A,) whether an open hypothesis of each active sentence (`index` tokens written)
        can still overtake its best finished one, by `stopping`'s rule: scores only fall, and
        the penalty at max_decode_length ("exact") or at the next length ("heuristic") bounds
        the ranking it can reach."""
        longest = max_decode_length if stopping == "exact" else index + 1
        reachable = tf.reduce_max(tf.reshape(scores, [-1, k]), axis=1) / penalty(longest)
        return reachable > best_of_active

    def step(index, active, ids, scores, best, best_ids, cache):
        sentences = tf.shape(active)[0]
        rows = sentences * k
        first_row = tf.repeat(tf.range(sentences) * k, k)  # each row's sentence's first row
        # The last token by a gather: a slice between tensor bounds has a dynamic size in XLA.
        last = tf.gather(ids, index - 1, axis=1)[:, None]
        logits, cache = model.decode_step(last, index - 1, cache, shift=fixed_shapes)
        logits = tf.cast(tf.squeeze(logits, 1), tf.float32)  # (R, V)
        # The best k + 1 continuations of each hypothesis hold all that can matter: a
        # continuation among its sentence's best k that do not end ranks below at most k - 1
        # of them and one [END] in its own row. Two more per row, as [PAD] and [START] may be
        # among them and are never written. Ranked within rows first, then among the
        # sentence's k * (k + 3), rather than among all k * V.
        # A vocabulary may be smaller (in tests); a padded table's last columns are no ids.
        per_row = min(k + 3, logits.shape[1] if output_ids is None else output_ids.shape[0])
        # Log-probabilities: the logits less the row's log-sum-exp. Under XLA the plain form
        # (taking the log-sum-exp's largest term from top_k made XLA's program forty times
        # slower, and the blocks gain nothing there).
        row_scores, row_tokens = best_per_row(logits, per_row, blocks=not fixed_shapes)
        if output_ids is not None:  # positions among the ids that may be written -> ids
            row_tokens = tf.gather(output_ids, row_tokens)
        banned = tf.equal(row_tokens, PAD_ID) | tf.equal(row_tokens, START_ID)
        row_scores = tf.where(banned, NEVER, row_scores)
        candidates = tf.reshape(scores[:, None] + row_scores, [sentences, k * per_row])
        top_scores, top = tf.math.top_k(candidates, 2 * k)  # (A, 2k), best first
        tokens = tf.gather(tf.reshape(row_tokens, [sentences, k * per_row]), top, batch_dims=1)
        rows_of = top // per_row + first_row[::k, None]
        ends = tf.equal(tokens, END_ID)
        written = tf.where(
            tf.equal(positions, index)[None, None, :], tokens[..., None], tf.gather(ids, rows_of)
        )  # (A, 2k, L)
        # Finished: an [END] among the best k; the sentence keeps its best, penalised.
        finishing = tf.where(
            ends & (tf.range(2 * k) < k)[None, :], top_scores / penalty(index), tf.float32.min
        )
        champion = tf.argmax(finishing, axis=1, output_type=tf.int32)
        champion_score = tf.reduce_max(finishing, axis=1)
        best_of_active = tf.gather(best, active)
        better = champion_score > best_of_active
        best_of_active = tf.where(better, champion_score, best_of_active)
        best = tf.tensor_scatter_nd_update(best, active[:, None], best_of_active)
        best_ids = tf.tensor_scatter_nd_update(
            best_ids,
            active[:, None],
            tf.where(
                better[:, None],
                tf.gather(written, champion, batch_dims=1),
                tf.gather(best_ids, active),
            ),
        )
        # Open: the best k that do not end (a stable sort by "ends" keeps the ranking).
        keep = tf.argsort(tf.cast(ends, tf.int32), axis=1, stable=True)[:, :k]
        parents = tf.reshape(tf.gather(rows_of, keep, batch_dims=1), [-1])
        ids = tf.reshape(tf.gather(written, keep, batch_dims=1), [rows, length])
        scores = tf.reshape(tf.gather(top_scores, keep, batch_dims=1), [-1])
        if k > 1:  # greedy: every row is its own parent
            cache = {**cache, "history": gather_rows(cache["history"], parents)}
        if not fixed_shapes:
            # The decided sentences leave: their rows go from the hypotheses and the cache, in
            # the steps where the batch shrinks.
            staying = tf.where(undecided_among(scores, best_of_active, index))[:, 0]
            staying = tf.cast(staying, tf.int32)
            kept_rows = tf.reshape(staying[:, None] * k + tf.range(k)[None, :], [-1])
            per_row = (active, ids, scores, {key: cache[key] for key in PER_ROW})
            active, ids, scores, per_row = tf.cond(
                tf.shape(staying)[0] < sentences,
                lambda: (tf.gather(active, staying), *gather_rows(per_row[1:], kept_rows)),
                lambda: per_row,
            )
            cache = {**cache, **per_row}
        return index + 1, active, ids, scores, best, best_ids, cache

    def undecided(index, active, ids, scores, best, best_ids, cache):
        if not fixed_shapes:  # every sentence still in the batch is undecided
            return tf.shape(active)[0] > 0
        return tf.reduce_any(undecided_among(scores, tf.gather(best, active), index - 1))

    state = (tf.constant(1), active, ids, scores, best, best_ids, cache)
    # The number of rows may be static or not, at every step; a growing cache's length changes.
    invariants = tf.nest.map_structure(
        lambda x: tf.TensorShape([None] + x.shape[1:]) if x.shape.rank else x.shape, state
    )
    if not fixed_shapes:
        invariants[-1]["history"] = tuple(
            tf.TensorShape([None, x.shape[1], None, *x.shape[3:]]) if x.shape.rank >= 3 else shape
            for x, shape in zip(cache["history"], invariants[-1]["history"])
        )
    _, active, ids, scores, best, best_ids, _ = tf.while_loop(
        undecided, step, state, shape_invariants=invariants, maximum_iterations=max_decode_length
    )
    # A sentence with no finished translation: its best open hypothesis (first of its beams).
    best_open = tf.tensor_scatter_nd_update(best_ids, active[:, None], ids[::k])
    return tf.where((best > tf.float32.min)[:, None], best_ids, best_open)
