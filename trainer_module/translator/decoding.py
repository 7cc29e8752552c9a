"""Beam search (greedy at width 1) over the translator's cached decoding steps, in the graph.

Each step decodes one position for every hypothesis (the key/value cache), adds its token
log-probabilities to the hypothesis' score and keeps the `beam_width` best continuations of each
sentence. A hypothesis that has written [END] only appends padding, at no cost to its score.
A sentence is done once no unfinished hypothesis can overtake its best finished one (scores only
fall), and decoding stops when every sentence of the batch is done or after max_decode_length
tokens; the result is each sentence's best finished hypothesis (the best unfinished one if none
finished).

Why not KerasHub's BeamSampler (which this replaced; `benchmarks/translation_decoding.py`
measures both): it reorders every cache tensor with `keras.ops.take_along_axis`, which
TensorFlow runs as an element-wise gather over indices broadcast to the tensor's whole shape,
and it runs until every hypothesis of every sentence has written [END]. Here a reorder is a row
gather of the self-attention history alone (the encoder's keys and values are the same for every
beam of a sentence), and the stopping rule above ends as soon as the result is known.
"""
import tensorflow as tf

from trainer_module.translator.config import END_ID, PAD_ID, START_ID

NEVER = -1.0e9  # a log-probability no search keeps


def make_generate(model, max_decode_length: int, beam_width: int):
    """Returns generate: (B, S) source ids -> (B, max_decode_length + 1) ids: [START], the
    tokens, [END], padding."""

    def generate(source_ids):
        return beam_search(model, source_ids, max_decode_length, beam_width)

    return generate


def beam_search(model, source_ids, max_decode_length: int, beam_width: int):
    """See the module docstring. Rows are sentence-major: row b * beam_width + k is beam k of
    sentence b."""
    k, length = beam_width, max_decode_length + 1
    memory, source_mask, _ = model.encode(source_ids, training=False)
    batch = tf.shape(source_ids)[0]
    rows = batch * k
    cache = model.start_decoding(tf.repeat(memory, k, axis=0), tf.repeat(source_mask, k, axis=0),
                                 length)
    ids = tf.concat([tf.fill([rows, 1], START_ID),
                     tf.fill([rows, max_decode_length], PAD_ID)], axis=1)
    # Every beam of a sentence starts as the same [START]: keep only the first one alive.
    scores = tf.tile(tf.constant([0.0] + [NEVER] * (k - 1)), [batch])
    finished = tf.zeros([rows], tf.bool)
    first_row = tf.repeat(tf.range(batch) * k, k)  # each row's sentence's first row
    positions = tf.range(length)

    def step(index, ids, scores, finished, cache):
        logits, cache = model.decode_step(ids[:, index - 1:index], index - 1, cache)
        log_probs = tf.nn.log_softmax(tf.cast(logits[:, 0, :], tf.float32))  # (R, V)
        vocab = tf.shape(log_probs)[1]
        # Unfinished: never padding or [START]. Finished: padding only, at no cost.
        banned = NEVER * (tf.one_hot(PAD_ID, vocab) + tf.one_hot(START_ID, vocab))
        pad_only = NEVER * (1.0 - tf.one_hot(PAD_ID, vocab))
        log_probs = tf.where(finished[:, None], pad_only[None, :], log_probs + banned[None, :])
        candidates = tf.reshape(scores[:, None] + log_probs, [batch, k * vocab])
        best_scores, best = tf.math.top_k(candidates, k)  # (B, K), best first
        parents = tf.reshape(best // vocab, [-1]) + first_row
        tokens = tf.reshape(best % vocab, [-1])
        ids = tf.where(tf.equal(positions, index)[None, :], tokens[:, None],
                       tf.gather(ids, parents))
        finished = tf.logical_or(tf.gather(finished, parents), tf.equal(tokens, END_ID))
        cache = {**cache, "history": tuple(tf.gather(x, parents) for x in cache["history"])}
        return index + 1, ids, tf.reshape(best_scores, [-1]), finished, cache

    def undecided(index, ids, scores, finished, cache):
        lowest = tf.float32.min
        by_sentence = lambda x: tf.reshape(x, [batch, k])  # noqa: E731
        best_finished = tf.reduce_max(by_sentence(tf.where(finished, scores, lowest)), axis=1)
        best_open = tf.reduce_max(by_sentence(tf.where(finished, lowest, scores)), axis=1)
        return tf.reduce_any(best_open > best_finished)

    state = (tf.constant(1), ids, scores, finished, cache)
    any_rows = tf.nest.map_structure(  # the number of rows may be static or not, at every step
        lambda x: tf.TensorShape([None] + x.shape[1:]) if x.shape.rank else x.shape, state)
    _, ids, scores, finished, _ = tf.while_loop(undecided, step, state,
                                                shape_invariants=any_rows,
                                                maximum_iterations=max_decode_length)
    # The best finished hypothesis of each sentence; the best unfinished one if none finished.
    ranked = tf.reshape(tf.where(finished, scores, scores + NEVER), [batch, k])
    chosen = tf.argmax(ranked, axis=1, output_type=tf.int32) + tf.range(batch) * k
    return tf.gather(ids, chosen)
