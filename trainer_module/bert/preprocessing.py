"""tf.Transform preprocessing for BERT: the preset's or checkpoint's own WordPiece tokenizer
(checkpoint.load_tokenizer), and the wide path's n-grams.

Outputs fixed-length int64 `token_ids` ([CLS] pieces [SEP] then [PAD]), `segment_ids` and
`padding_mask`, packed by KerasHub's MultiSegmentPacker as its BertTextClassifierPreprocessor
does, after head+tail truncation of the pieces (config.truncation_head); with the wide path,
`ngram_ids` of the whole review (trainer_module/preprocessing/ngrams.py). The vocabulary file
is an asset of the transform graph (`TFTransformOutput.vocabulary_file_by_name(VOCABULARY_NAME)`).
"""

import os
import tempfile
from typing import Any, Mapping

import keras_hub
import tensorflow as tf
import tensorflow_transform as tft

from trainer_module import features
from trainer_module.bert.checkpoint import load_tokenizer
from trainer_module.preprocessing.classes import record_classes
from trainer_module.preprocessing.ngrams import wide_path_features
from trainer_module.preprocessing.text import (
    as_vector,
    review_length_bucket,
    strip_line_breaks,
    tokenize,
    truncate,
)

VOCABULARY_NAME = "bert_vocabulary"
TOKEN_IDS = "token_ids"
SEGMENT_IDS = "segment_ids"
PADDING_MASK = "padding_mask"


def pack(
    tokenizer: keras_hub.models.BertTokenizer,
    text: tf.Tensor,
    sequence_length: int,
    truncation_head: int,
):
    """(B,) strings -> token_ids, segment_ids, padding_mask, each (B, sequence_length) int64:
    of a review with more WordPieces than fit, the first `truncation_head` and the last."""
    packer = keras_hub.layers.MultiSegmentPacker(
        sequence_length=sequence_length,
        start_value=tokenizer.cls_token_id,
        end_value=tokenizer.sep_token_id,
        pad_value=tokenizer.pad_token_id,
    )
    pieces = truncate(tokenizer(text), sequence_length - 2, truncation_head)
    token_ids, segment_ids = packer(pieces)
    padding_mask = tf.not_equal(token_ids, tokenizer.pad_token_id)
    return (
        tf.cast(token_ids, tf.int64),
        tf.cast(segment_ids, tf.int64),
        tf.cast(padding_mask, tf.int64),
    )


def _vocabulary_asset(tokenizer: keras_hub.models.BertTokenizer) -> str:
    """The tokenizer's vocabulary written to a file that tf.Transform copies into its assets."""
    directory = tempfile.mkdtemp(prefix="bert_vocabulary_")
    tokenizer.save_assets(directory)
    return os.path.join(directory, "vocabulary.txt")


@tf.autograph.experimental.do_not_convert  # TF ops alone (trainer_module/preprocessing)
def preprocessing_fn(inputs: Mapping[str, tf.Tensor], custom_config: Mapping[str, Any]) -> dict:
    """custom_config (config.transform_config): `backbone_preset` (checkpoint.py),
    `sequence_length`, `truncation_head`, and the wide path's `ngram_buckets` (0: none),
    `ngram_order` and `max_ngrams`."""
    tokenizer = load_tokenizer(custom_config["backbone_preset"])
    vocabulary_file = _vocabulary_asset(tokenizer)
    tft.annotate_asset(VOCABULARY_NAME, vocabulary_file)
    tf.compat.v1.add_to_collection(
        tf.compat.v1.GraphKeys.ASSET_FILEPATHS, tf.constant(vocabulary_file)
    )

    text = as_vector(inputs[features.TEXT])
    sequence_length = int(custom_config["sequence_length"])
    token_ids, segment_ids, padding_mask = pack(
        tokenizer,
        strip_line_breaks(text),
        sequence_length,
        int(custom_config.get("truncation_head", sequence_length - 2)),
    )
    words = tokenize(text)
    outputs = {
        TOKEN_IDS: token_ids,
        SEGMENT_IDS: segment_ids,
        PADDING_MASK: padding_mask,
        features.LENGTH_BUCKET: review_length_bucket(words),
    }
    if features.LABEL in inputs:
        outputs[features.LABEL] = tf.cast(as_vector(inputs[features.LABEL]), tf.int64)
    outputs.update(wide_path_features(words, outputs.get(features.LABEL), custom_config))
    record_classes(inputs, outputs.get(features.LABEL))
    return outputs
