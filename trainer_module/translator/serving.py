"""Exports the translator with tokenization, autoregressive decoding and detokenization inside
the SavedModel: plain TensorFlow loads it and translates raw strings.

Signatures:
  translate(source: string (B,))         -> translation (B,) string, token_ids (B, L) int32
  serving_default(examples: tf.Example)  -> translation, and teacher-forced correct_tokens /
                                            target_tokens when the example has a target (TFMA)
  transform_features(examples)           -> Transform's outputs (TFMA reads `reference`)
  translate_transformed(source_ids)      -> token_ids: the beam search alone, on Transform's
                                            source ids (for ONNX converters)
  attention(source: string (B,))         -> source_tokens (B, S), target_tokens (B, L) (the
                                            translation's tokens), their masks, and each decoder
                                            layer's cross-attention (B, layers, heads, L, S)

Decoding is beam search (greedy at beam_width 1) in the graph, one cached position per step
(decoding.py): it starts from [START] and stops at [END] or after max_decode_length tokens.
"""

from typing import Optional

import tensorflow as tf
import tensorflow_transform as tft

from trainer_module import features
from trainer_module.serving.archive import strings_function, write_saved_model
from trainer_module.serving.contract import TRANSLATE
from trainer_module.translator import wordpiece
from trainer_module.translator.config import (
    DECODER_INPUT_IDS,
    END_ID,
    PAD_ID,
    SOURCE_IDS,
    TARGET_IDS,
)
from trainer_module.translator.decoding import DecodingWeights, make_generate
from trainer_module.translator.model import Translator
from trainer_module.translator.preprocessing import (
    SOURCE_VOCABULARY,
    TARGET_VOCABULARY,
    is_wordpiece,
    output_ids,
    vocabulary_tokens,
)


def detokenize(token_ids: tf.Tensor, words: tf.Tensor, pieces: bool = True) -> tf.Tensor:
    """(B, L) ids after [START] -> (B,) strings: the tokens before [END], as text (`pieces`:
    WordPiece pieces, joined as written; else words, joined by spaces)."""
    ended = tf.cumsum(tf.cast(tf.equal(token_ids, END_ID), tf.int32), axis=1) > 0
    keep = tf.logical_and(tf.logical_not(ended), tf.not_equal(token_ids, PAD_ID))
    tokens = tf.ragged.boolean_mask(tf.gather(words, token_ids), keep)
    if pieces:
        return wordpiece.detokenize(tokens)
    return tf.strings.reduce_join(tokens, axis=-1, separator=" ")


def until_end(token_ids: tf.Tensor) -> tf.Tensor:
    """(B, L) generated ids -> True up to and including the first [END]."""
    ends = tf.cast(tf.equal(token_ids, END_ID), tf.int32)
    return tf.logical_and(
        tf.equal(tf.cumsum(ends, axis=1) - ends, 0), tf.not_equal(token_ids, PAD_ID)
    )


def export(
    model: Translator,
    tf_transform_output: tft.TFTransformOutput,
    export_dir: str,
    max_decode_length: Optional[int] = None,
    beam_width: Optional[int] = None,
) -> None:
    """Writes the SavedModel; decoding follows model.config unless given here."""
    max_decode_length = max_decode_length or model.config.max_decode_length
    beam_width = beam_width or model.config.beam_width
    tft_layer = tf_transform_output.transform_features_layer()
    raw_spec = tf_transform_output.raw_feature_spec()
    source_shape = list(raw_spec[features.SOURCE].shape)  # [] or [1], as SchemaGen inferred
    target_shape = list(raw_spec[features.TARGET].shape)
    example_spec = {
        features.SOURCE: raw_spec[features.SOURCE],
        # Present in evaluation data, absent in requests: default to "" (no teacher forcing).
        features.TARGET: tf.io.FixedLenFeature(
            target_shape, tf.string, default_value=[""] if target_shape else ""
        ),
    }
    words = tf.constant(vocabulary_tokens(tf_transform_output, TARGET_VOCABULARY))
    pieces = is_wordpiece(tf_transform_output)
    # The weights as the search reads them (cast, the output table transposed), stored with
    # the model so that a request does not prepare them again.
    decoding_weights = DecodingWeights(
        model,
        output_ids(tf_transform_output) if model.config.output_vocabulary == "targets" else None,
    )
    # Traced once, called by every signature that decodes.
    generate = tf.function(
        make_generate(
            model,
            max_decode_length,
            beam_width,
            model.config.length_penalty,
            model.config.jit_compile,
            decoding_weights,
            model.config.stopping,
            model.config.jit_compile_max_batch,
        ),
        input_signature=[tf.TensorSpec([None, None], tf.int32)],
        autograph=False,
    )

    def translate_ids(source_ids):
        ids = generate(tf.cast(source_ids, tf.int32))[:, 1:]
        return {"translation": detokenize(ids, words, pieces), "token_ids": ids}

    @strings_function("source")
    def translate(source):
        transformed = tft_layer({features.SOURCE: tf.reshape(source, [-1] + source_shape)})
        return translate_ids(transformed[SOURCE_IDS])

    @strings_function("examples")
    def serve_examples(serialized):
        raw = tf.io.parse_example(serialized, example_spec)
        transformed = tft_layer(raw)
        outputs = translate_ids(transformed[SOURCE_IDS])
        # Teacher-forced token accuracy, for TFMA's masked token accuracy.
        logits = model(
            {
                SOURCE_IDS: transformed[SOURCE_IDS],
                DECODER_INPUT_IDS: transformed[DECODER_INPUT_IDS],
            },
            training=False,
        )
        targets = transformed[TARGET_IDS]
        has_target = tf.not_equal(tf.reshape(raw[features.TARGET], [-1]), "")
        real = tf.logical_and(tf.not_equal(targets, PAD_ID), has_target[:, None])
        hits = tf.logical_and(tf.equal(tf.argmax(logits, axis=-1), targets), real)
        outputs["correct_tokens"] = tf.reduce_sum(tf.cast(hits, tf.float32), axis=1)
        outputs["target_tokens"] = tf.reduce_sum(tf.cast(real, tf.float32), axis=1)
        return outputs

    @strings_function("examples")
    def transform_features(serialized):
        return tft_layer(tf.io.parse_example(serialized, raw_spec))

    @tf.function(
        autograph=False,
        input_signature=[tf.TensorSpec([None, None], tf.int64, name=SOURCE_IDS)],
    )
    def translate_transformed(source_ids):
        # The model alone (the beam search) on Transform's source ids: what ONNX converters
        # take where the Transform graph's string ops stop them (benchmarks/int8_serving.py).
        return {"token_ids": generate(tf.cast(source_ids, tf.int32))[:, 1:]}

    source_words = tf.constant(vocabulary_tokens(tf_transform_output, SOURCE_VOCABULARY))

    @strings_function("source")
    def attention(source):
        # Decode, then replay the translation teacher-forced: row i of the cross-attention is
        # what the decoder attended to while emitting target token i.
        transformed = tft_layer({features.SOURCE: tf.reshape(source, [-1] + source_shape)})
        source_ids = tf.cast(transformed[SOURCE_IDS], tf.int32)
        generated = generate(source_ids)
        memory, source_mask, _ = model.encode(source_ids, training=False)
        _, _, cross = model.decode(generated[:, :-1], memory, source_mask, training=False)
        target_ids = generated[:, 1:]
        return {
            "source_tokens": tf.gather(source_words, source_ids),
            "source_mask": source_mask,
            "target_tokens": tf.gather(words, target_ids),
            "target_mask": until_end(target_ids),
            "cross_attention": tf.cast(tf.stack(cross, axis=1), tf.float32),
        }

    write_saved_model(
        export_dir,
        model,
        tft_layer,
        {
            "serving_default": serve_examples,
            TRANSLATE: translate,
            "transform_features": transform_features,
            "translate_transformed": translate_transformed,
            "attention": attention,
        },
        also_track=[decoding_weights],
    )
