"""A text's profile, written beside it by the text ExampleGens so that StatisticsGen describes,
and DistributionValidator compares, what the raw strings cannot show: the text's length in
words (a numeric histogram) and its word tokens (a value distribution over the data: another
language, topic or encoding moves it). No model reads them."""

import re
from typing import Dict

import tensorflow as tf

WORD_TOKEN = re.compile(r"\w+")  # Unicode letters, digits and underscores
# Tokens kept per text: the distribution needs a sample of each text, not all of it, and the
# examples stay about the size of the text.
PROFILE_TOKENS = 128


def text_profile(text: str, words: str, tokens: str) -> Dict[str, tf.train.Feature]:
    """{words: the number of words, tokens: the first PROFILE_TOKENS lower-cased tokens}, with
    the feature names trainer_module/features.py gives them."""
    found = WORD_TOKEN.findall(text.lower())[:PROFILE_TOKENS]
    return {
        words: tf.train.Feature(int64_list=tf.train.Int64List(value=[len(text.split())])),
        tokens: tf.train.Feature(
            bytes_list=tf.train.BytesList(value=[token.encode("utf-8") for token in found])
        ),
    }
