"""Text ops the text families' preprocessing_fns share: normalise, tokenise into words, bucket
by length. They run in the Transform component and inside every served model's graph."""

import tensorflow as tf

# Review length (in words, before truncation) at which each TFMA slice bucket starts: the
# `length_bucket` slice every text classifier writes for the IMDB task's EvalConfig.
REVIEW_LENGTH_BUCKETS = ((0, "0-99"), (100, "100-249"), (250, "250-499"), (500, "500+"))


def strip_line_breaks(text: tf.Tensor) -> tf.Tensor:
    """aclImdb keeps the reviews' HTML line breaks (`<br />`): make them spaces."""
    return tf.strings.regex_replace(text, r"<br\s*/?>", " ")


def normalize(text: tf.Tensor) -> tf.Tensor:
    """Lower-cases (Unicode-aware), turns `<br />` into spaces and sets punctuation apart."""
    text = strip_line_breaks(tf.strings.lower(text, encoding="utf-8"))
    return tf.strings.regex_replace(text, r"([\pP\pS])", r" \1 ")


def tokenize(text: tf.Tensor) -> tf.RaggedTensor:
    """(B,) strings -> (B, None) ragged tokens, split on whitespace after `normalize`."""
    return tf.strings.split(normalize(text))


def truncate(ids: tf.RaggedTensor, max_length: int, head: int) -> tf.RaggedTensor:
    """Keeps at most `max_length` ids per row: the first `head` and the last `max_length - head`.

    head == max_length keeps the beginning only. Reviews often give their verdict at the end,
    which head-only truncation drops (Sun et al., 2019, "How to Fine-Tune BERT for Text
    Classification?", found head+tail truncation best on IMDB).
    """
    if not 0 <= head <= max_length:
        raise ValueError(f"head={head} must be between 0 and max_length={max_length}")
    # On the flat values, with few ops: tf.Transform traces this function about ten times, and
    # ragged broadcasting cost ~1 s per trace, boolean masks and the ragged constructor's
    # checks (kept rows stay sorted and in range) most of the rest.
    rows = ids.value_rowids()  # (N,): the row of each id
    position = tf.range(tf.shape(rows, out_type=rows.dtype)[0]) - tf.gather(ids.row_starts(), rows)
    tail_start = tf.gather(ids.row_lengths(), rows) - (max_length - head)
    kept = tf.where((position < head) | (position >= tail_start))[:, 0]
    return tf.RaggedTensor.from_value_rowids(
        tf.gather(ids.flat_values, kept), tf.gather(rows, kept), nrows=ids.nrows(), validate=False
    )


def length_bucket(tokens: tf.RaggedTensor, buckets) -> tf.Tensor:
    """(B,) bucket names by token count; `buckets` = ((first length, name), ...), ascending."""
    lengths = tokens.row_lengths()
    bucket = tf.fill(tf.shape(lengths), buckets[0][1])
    for start, name in buckets[1:]:
        bucket = tf.where(lengths >= start, name, bucket)
    return bucket


def as_vector(tensor: tf.Tensor) -> tf.Tensor:
    """(B,) or (B, 1) -> (B,): SchemaGen may infer a fixed shape of [1] for scalar features."""
    if isinstance(tensor, tf.SparseTensor):
        tensor = tf.sparse.to_dense(tensor, default_value="" if tensor.dtype == tf.string else 0)
    return tf.reshape(tensor, [-1])


def review_length_bucket(tokens: tf.RaggedTensor) -> tf.Tensor:
    """(B, None) words (`tokenize`) -> (B,) review-length slice names."""
    return length_bucket(tokens, REVIEW_LENGTH_BUCKETS)
