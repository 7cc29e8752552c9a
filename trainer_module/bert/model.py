"""A pretrained BERT backbone with a classification head (token ids in, class logits out), and
optionally the wide n-gram path (NBSVM) whose logit is combined with BERT's."""

import math
from typing import TYPE_CHECKING, Optional, Sequence

import keras
import numpy as np
from keras import ops

from trainer_module import compat
from trainer_module.bert.checkpoint import load_backbone
from trainer_module.bert.config import BertConfig
from trainer_module.layers import masked_mean
from trainer_module.layers.ngram import WideAndDeep

if TYPE_CHECKING:
    from trainer_module.training.pretraining import Pretraining

BACKBONE_INPUTS = ("token_ids", "segment_ids", "padding_mask")  # BertBackbone's own inputs
# The layers below the first encoder block, frozen with `frozen_layers`.
EMBEDDING_LAYERS = (
    "token_embedding",
    "position_embedding",
    "segment_embedding",
    "embeddings_layer_norm",
)


class BertClassifier(WideAndDeep, keras.Model):
    """BERT's pooled output -> dropout -> dense logits, as KerasHub's BertTextClassifier; with
    config.ngram_buckets, combined with the wide path's logit (layers/ngram.py: WideAndDeep).

    Args:
        backbone: a keras_hub BertBackbone (checkpoint.load_backbone).
        config: BertConfig: pooling, dropout, num_classes, the wide path.

    Call arguments:
        inputs: a dict of `token_ids`, `segment_ids`, `padding_mask` (B, T) ints, and with the
            wide path `ngram_ids` (B, M), each review's distinct hashed n-grams, 0 pads.

    Returns:
        Logits (B, num_classes), float32: the head's, or with the wide path the combination's
        (`path_logits`: the combination's, BERT's and the wide path's, WideAndDeep).
    """

    def __init__(self, backbone, config: BertConfig, **kwargs):
        super().__init__(**kwargs)
        self.backbone, self.config = backbone, config
        self.head_dropout = keras.layers.Dropout(config.dropout)
        self.head = keras.layers.Dense(
            config.num_classes,
            dtype="float32",
            name="logits",
            kernel_initializer=keras.initializers.TruncatedNormal(stddev=0.02),
        )
        self.init_wide_path(config.ngram_buckets, config.num_classes)
        if config.attention_dropout is not None:
            for block in backbone.transformer_layers:
                compat.set_attention_dropout(block, config.attention_dropout)

    def deep_logits(self, inputs, training=None):
        sequence = self.encode(inputs, training)  # (B, T, H)
        if self.config.pooling == "mean":
            pooled = masked_mean(sequence, inputs["padding_mask"])
        else:
            pooled = ops.cast(self.backbone.pooled_dense(sequence[:, 0, :]), "float32")  # (B, H)
        return self.head(self.head_dropout(pooled, training=training))  # (B, C)

    def encode(self, inputs, training=None):
        """The backbone's last hidden states, through its own layers (as BertBackbone's graph),
        with every layer that does not train in inference mode (as Keras runs a frozen
        BatchNormalization): the frozen embeddings and blocks are a fixed feature extractor,
        and their dropout would only cost random numbers (docs/benchmarks/imdb.md#bert-steps)."""
        backbone = self.backbone
        tokens = backbone.token_embedding(inputs["token_ids"])
        x = backbone.embeddings_add(
            (
                tokens,
                backbone.position_embedding(tokens),
                backbone.segment_embedding(inputs["segment_ids"]),
            )
        )
        x = backbone.embeddings_layer_norm(x)
        x = backbone.embeddings_dropout(
            x, training=training and backbone.embeddings_layer_norm.trainable
        )
        for block in backbone.transformer_layers:
            x = block(x, padding_mask=inputs["padding_mask"], training=training and block.trainable)
        return x

    def train_phase(self, phase: str) -> None:
        """What trains in a phase: "head" the head alone; "full" everything but the embeddings
        and the bottom config.frozen_layers blocks (with frozen_layers > 0), and the pooler
        unless the head reads it ("cls" pooling). The wide path trains in neither
        (training/wide_path.py)."""
        if phase not in ("head", "full"):
            raise ValueError(f"phase must be 'head' or 'full', not {phase!r}")
        full = phase == "full"
        self.backbone.trainable = full
        if self.ngram_logit is not None:
            self.ngram_logit.trainable = False
        if self.config.pooling != "cls":  # the pooler is not read: nothing to train
            self.backbone.pooled_dense.trainable = False
        if full and self.config.frozen_layers:
            for name in EMBEDDING_LAYERS:
                self.backbone.get_layer(name).trainable = False
            for block in self.backbone.transformer_layers[: self.config.frozen_layers]:
                block.trainable = False

    def learning_rate_scales(self, decay: float) -> dict:
        """{variable path: its learning-rate scale} under layer-wise decay: decay ** k for the
        k-th block from the top (0: the top one) and decay ** num_layers for the embeddings;
        {} with decay 1 (the head and the wide path are never scaled)."""
        if decay == 1.0:
            return {}
        blocks = self.backbone.transformer_layers
        layers = [(self.backbone.get_layer(name), len(blocks)) for name in EMBEDDING_LAYERS]
        layers += [(block, len(blocks) - 1 - i) for i, block in enumerate(blocks)]
        return {v.path: decay**depth for layer, depth in layers for v in layer.weights}


def pretraining(model: BertClassifier, vocabulary: Sequence[str], token_batches) -> "Pretraining":
    """What task-adaptive pretraining of `model`'s backbone needs (training/pretraining.py): its
    own embeddings and blocks (model.encode, every block training), masking by the
    vocabulary's [MASK] id, never choosing [PAD], [CLS] or [SEP], with random replacements
    drawn from the word pieces after the bracketed special and unused entries; and
    `token_batches()`, endless batches of (B, T) token ids as Transform packed them. The
    masked-token head is new (tied to the token embedding): a checkpoint such as
    all-MiniLM-L6-v2 has none."""
    # Pretraining's input pipeline is TensorFlow's; the model above is any backend's.
    from trainer_module.training.pretraining import Masking, Pretraining

    config = model.config
    ids = {token: i for i, token in enumerate(vocabulary)}
    missing = [t for t in ("[PAD]", "[CLS]", "[SEP]", "[MASK]") if t not in ids]
    if missing:
        raise ValueError(f"the BERT vocabulary has no {missing}: it cannot mask tokens")
    bracketed = [i for i, token in enumerate(vocabulary) if token[:1] + token[-1:] == "[]"]
    pad = ids["[PAD]"]

    def encode(token_ids, training=None):
        return model.encode(
            {
                "token_ids": token_ids,
                "segment_ids": ops.zeros_like(token_ids),
                "padding_mask": ops.cast(ops.not_equal(token_ids, pad), "int32"),
            },
            training,
        )

    model.backbone.trainable = True  # every block, whatever the fine-tuning freezes later
    return Pretraining(
        encode=encode,
        layers=[model.backbone],
        embeddings=model.backbone.token_embedding.embeddings,
        masking=Masking(
            mask_id=ids["[MASK]"],
            random_ids=(max(bracketed) + 1, len(vocabulary)),
            special_ids=(pad, ids["[CLS]"], ids["[SEP]"]),
            rate=config.mask_rate,
            predictions=max(1, math.ceil(config.sequence_length * config.mask_rate)),
            objective=config.pretrain_objective,
        ),
        token_batches=token_batches,
    )


def build_classifier(
    config: BertConfig, ngram_ratios: Optional[np.ndarray] = None
) -> BertClassifier:
    """The classifier over `config.backbone_preset`'s pretrained backbone, built but not
    compiled: fine-tuning compiles it per phase (training.py), so it has no build_model over
    training steps as the families trained in one fit do; with
    config.ngram_buckets, `ngram_ratios` (Transform's, preprocessing/ngrams.py) set the wide
    path's naive-Bayes ratios."""
    backbone = load_backbone(config.backbone_preset)
    if backbone.max_sequence_length < config.sequence_length:
        raise ValueError(
            f"sequence_length={config.sequence_length} exceeds the backbone's "
            f"max_sequence_length={backbone.max_sequence_length}"
        )
    if config.frozen_layers > backbone.num_layers:
        raise ValueError(
            f"frozen_layers={config.frozen_layers} exceeds the backbone's "
            f"{backbone.num_layers} layers"
        )
    model = BertClassifier(backbone, config)
    model(example_inputs(config))  # build the weights
    if config.ngram_buckets:
        if ngram_ratios is None or model.ngram_logit is None:
            raise ValueError("ngram_buckets needs Transform's n-gram ratios")
        model.ngram_logit.set_ratios(ngram_ratios)
    return model


def example_inputs(config: BertConfig, batch_size: int = 1) -> dict:
    """Inputs of the shape the model takes: [CLS] [SEP] then padding."""
    token_ids = np.zeros((batch_size, config.sequence_length), "int32")
    padding_mask = np.zeros_like(token_ids)
    padding_mask[:, :2] = 1
    inputs = {
        "token_ids": token_ids,
        "segment_ids": np.zeros_like(token_ids),
        "padding_mask": padding_mask,
    }
    if config.ngram_buckets:
        inputs["ngram_ids"] = np.zeros((batch_size, config.max_ngrams), "int32")
    return inputs
