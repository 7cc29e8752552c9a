"""Writes a tiny, randomly initialised BERT as a local KerasHub preset directory.

Pretrained presets download their weights at run time; this one is built here, so the BERT
model family can be tested and run offline end to end:

    python -m trainer_module.bert.tiny_preset outputs/bert_tiny_random

The vocabulary is written out below: BERT's special tokens, punctuation, a few hundred common
English and movie-review words, and every letter and digit alone and as a `##` continuation,
so that any ASCII word has a WordPiece segmentation.
"""
import os
import string
import sys

import keras
import keras_hub

SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
WORDS = """
the a an and or but of to in on at for with by from as is was are were be been it its this
that these those i you he she we they me my your his her our their not no never very too so
just only also even still all some any more most much many one two three first last new old
good great bad best worst well better worse love loved loves hate hated like liked enjoy
enjoyed film films movie movies story plot acting actor actors actress cast director script
scene scenes score music ending end character characters performance performances role
wonderful brilliant beautiful beautifully superb excellent amazing perfect charming moving
funny fun delight delightful masterpiece heartfelt clever smart tight thrilling gorgeous
captivated recommended joy warm genuinely absolute absolutely highly surprising
awful terrible boring dull lifeless mess tedious flat stupid lazy predictable confused
disaster clumsy cynical wooden chore waste painfully badly horribly grating utter bored
avoid skip money time minute minutes hour hours year years watch watched watching see saw
seen make makes made feel felt think thought expected little lot nothing every never ever
what how who why when where there here up out about over after before again then than
people family friend town winter night set based book novel trailer festival screen
""".split()
PUNCTUATION = list("!?.,;:'\"-()/*&%$#@") + ["—", "…", "★"]
CHARACTERS = list(string.ascii_lowercase + string.digits)

VOCABULARY = list(dict.fromkeys(
    SPECIAL + PUNCTUATION + WORDS + CHARACTERS + ["##" + c for c in CHARACTERS]))


def write_tiny_preset(directory: str, num_layers: int = 2, hidden_dim: int = 32,
                      num_heads: int = 2, intermediate_dim: int = 64,
                      max_sequence_length: int = 512, seed: int = 0) -> str:
    """Saves a random BertBackbone and an uncased BertTokenizer to `directory`."""
    keras.utils.set_random_seed(seed)
    tokenizer = keras_hub.models.BertTokenizer(vocabulary=VOCABULARY, lowercase=True)
    backbone = keras_hub.models.BertBackbone(
        vocabulary_size=len(VOCABULARY), num_layers=num_layers, num_heads=num_heads,
        hidden_dim=hidden_dim, intermediate_dim=intermediate_dim,
        max_sequence_length=max_sequence_length)
    os.makedirs(directory, exist_ok=True)
    backbone.save_to_preset(directory)
    tokenizer.save_to_preset(directory)
    return directory


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m trainer_module.bert.tiny_preset DIRECTORY")
    print(write_tiny_preset(sys.argv[1]))
