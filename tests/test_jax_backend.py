"""The model code is backend-agnostic Keras 3: every family's model builds, trains a step and
predicts under KERAS_BACKEND=jax, in a fresh process, without importing TensorFlow (until the
BERT family, whose KerasHub tokenizers use it)."""

import json
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow  # a fresh JAX process building and training every family

SCRIPT = r"""
import json, sys
import numpy as np
import keras
from keras import ops

from trainer_module.text_encoder.config import PRESETS as TEXT
from trainer_module.text_encoder.model import TextEncoderClassifier
from trainer_module.translator.config import PRESETS as TRANSLATOR
from trainer_module.translator.model import Translator
from trainer_module.training.optimizers import adamw
from trainer_module.training.schedules import WarmupInverseSqrt
from trainer_module.training.sequence_losses import MaskedSequenceCrossEntropy, MaskedTokenAccuracy
from trainer_module.vit.config import PRESETS as VIT
from trainer_module.vit.model import VitClassifier

np.random.seed(0)  # (keras.utils.set_random_seed would import TensorFlow to seed it too)
report = {"backend": keras.backend.backend()}


def step(model, x, y, loss, metrics=()):
    model(x)  # build the weights
    model.compile(optimizer=adamw(WarmupInverseSqrt(1e-3, 2), 0.01), loss=loss,
                  metrics=list(metrics))
    before = [np.array(w) for w in model.trainable_weights]
    logs = model.train_on_batch(x, y, return_dict=True)
    moved = any(not np.allclose(a, np.array(b)) for a, b in zip(before, model.trainable_weights))
    return {"loss": float(logs["loss"]), "moved": moved}


text = TextEncoderClassifier(TEXT["tiny"].replace(vocab_size=20))
ids = {"token_ids": np.random.randint(0, 22, size=(4, 32)),
       "ngram_ids": np.random.randint(0, 257, size=(4, 32))}  # the wide path too
report["text_encoder"] = step(text, ids, np.eye(2)[[0, 1, 0, 1]],
                              keras.losses.CategoricalCrossentropy(from_logits=True))
report["text_encoder"]["logits"] = list(ops.shape(text(ids)))

translator = Translator(TRANSLATOR["tiny"].replace(source_vocab_size=20, target_vocab_size=20))
source = np.random.randint(1, 24, size=(4, 8))
inputs = {"source_ids": source, "decoder_input_ids": source}
report["translator"] = step(translator, inputs, source, MaskedSequenceCrossEntropy(0.1),
                            [MaskedTokenAccuracy()])
memory, mask, _ = translator.encode(source)
cache = translator.start_decoding(memory, mask, max_length=4)
logits, _ = translator.decode_step(ops.convert_to_tensor(source[:, :1]), 0, cache, shift=True)
report["translator"]["decode_step"] = list(ops.shape(logits))

vit = VitClassifier(VIT["tiny"])
images = np.random.normal(size=(4, 16, 16, 3)).astype("float32")
report["vit"] = step(vit, images, np.eye(10)[[0, 1, 2, 3]],
                     keras.losses.CategoricalCrossentropy(from_logits=True))
report["vit"]["logits"] = list(ops.shape(vit(images)))
hybrid = VitClassifier(VIT["tiny"].replace(tokenizer="hybrid", conv_filters=8, whitening_kernel=2,
                                           stem_pooling=True, flip_test_time=True))
hybrid(images)
hybrid.whiten(images)  # patch whitening's kernel from these images (numpy), then frozen
report["vit_hybrid"] = step(hybrid, images, np.eye(10)[[0, 1, 2, 3]],
                            keras.losses.CategoricalCrossentropy(from_logits=True))
report["vit_hybrid"]["logits"] = list(ops.shape(hybrid(images)))
report["tensorflow_imported"] = "tensorflow" in sys.modules

from trainer_module.bert.config import PRESETS as BERT
from trainer_module.bert.model import build_classifier

config = BERT["tiny"].replace(backbone_preset=sys.argv[1], sequence_length=8,
                              truncation_head=2)
bert = build_classifier(config, np.ones(config.ngram_buckets + 1))  # the wide path too
tokens = {"token_ids": np.random.randint(5, 50, size=(4, 8)),
          "segment_ids": np.zeros((4, 8), "int32"), "padding_mask": np.ones((4, 8), "int32"),
          "ngram_ids": np.random.randint(0, 257, size=(4, 32))}
report["bert"] = step(bert, tokens, np.eye(2)[[0, 1, 0, 1]],
                      keras.losses.CategoricalCrossentropy(from_logits=True))
print(json.dumps(report))
"""


def test_every_model_trains_and_predicts_under_jax(tiny_bert_preset):
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT, tiny_bert_preset],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "KERAS_BACKEND": "jax", "JAX_PLATFORMS": "cpu"},
    )
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["backend"] == "jax"
    assert report["tensorflow_imported"] is False  # the models use keras.ops alone
    for family in ("text_encoder", "translator", "vit", "vit_hybrid", "bert"):
        assert report[family]["moved"] and report[family]["loss"] > 0, family
    assert report["text_encoder"]["logits"] == [4, 2]
    assert report["translator"]["decode_step"] == [4, 1, 24]
    assert report["vit"]["logits"] == report["vit_hybrid"]["logits"] == [4, 10]
