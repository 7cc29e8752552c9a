"""A pretrained BERT backbone with a classification head (token ids in, class logits out), and
optionally the wide n-gram path (NBSVM) whose logit is added to BERT's."""

import keras
import numpy as np
from keras import ops

from trainer_module.bert.checkpoint import load_backbone
from trainer_module.bert.config import BertConfig
from trainer_module.layers import NgramLogit, masked_mean, naive_bayes_ratios
from trainer_module.layers.ngram import add_to_logits

BACKBONE_INPUTS = ("token_ids", "segment_ids", "padding_mask")
# The layers below the first encoder block, frozen with `frozen_layers`.
EMBEDDING_LAYERS = (
    "token_embedding",
    "position_embedding",
    "segment_embedding",
    "embeddings_layer_norm",
)


class BertClassifier(keras.Model):
    """BERT's pooled output -> dropout -> dense logits, as KerasHub's BertTextClassifier; with
    config.ngram_buckets, plus the wide path's logit.

    Args:
        backbone: a keras_hub BertBackbone (checkpoint.load_backbone).
        config: BertConfig: pooling, dropout, num_classes, the wide path's buckets, rate scale
            and loss.

    Call arguments:
        inputs: a dict of `token_ids`, `segment_ids`, `padding_mask` (B, T) ints, and with the
            wide path `ngram_ids` (B, M), each review's distinct hashed n-grams, 0 pads.

    Returns:
        Logits (B, num_classes), float32: the sum of both paths'. While `self.paths` is set (in
        training, with config.wide_loss "separate"), (B, 3, num_classes): the sum, BERT's and
        the wide path's, which `compute_loss` trains on their own and `compute_metrics` reports
        (`accuracy` of the sum, `bert_accuracy`, `wide_accuracy`).
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
        self.ngram_logit = (
            NgramLogit(config.ngram_buckets, config.ngram_rate_scale, name="ngram_logit")
            if config.ngram_buckets
            else None
        )
        self.paths = bool(config.ngram_buckets) and config.wide_loss == "separate"
        if self.paths:
            self.path_accuracy = {
                path: keras.metrics.CategoricalAccuracy(name=f"{path}_accuracy")
                for path in ("bert", "wide")
            }

    def call(self, inputs, training=None):
        backbone_inputs = {k: inputs[k] for k in BACKBONE_INPUTS}
        outputs = self.backbone(backbone_inputs, training=training)
        if self.config.pooling == "mean":
            pooled = masked_mean(outputs["sequence_output"], backbone_inputs["padding_mask"])
        else:
            pooled = ops.cast(outputs["pooled_output"], "float32")  # (B, H)
        logits = self.head(self.head_dropout(pooled, training=training))  # (B, C)
        if self.ngram_logit is None:
            return logits
        wide = add_to_logits(ops.zeros_like(logits), self.ngram_logit(inputs["ngram_ids"]))
        if self.paths:
            return ops.stack([logits + wide, logits, wide], axis=1)  # (B, 3, C)
        return logits + wide

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        if y_pred is None or len(y_pred.shape) != 3:
            return super().compute_loss(x, y, y_pred, sample_weight, training)
        # Each path on its own loss: an ensemble trained side by side.
        return sum(
            super(BertClassifier, self).compute_loss(x, y, y_pred[:, path], sample_weight, training)
            for path in (1, 2)
        )

    def compute_metrics(self, x, y, y_pred, sample_weight=None):
        if len(y_pred.shape) != 3:
            return super().compute_metrics(x, y, y_pred, sample_weight)
        for index, path in enumerate(("bert", "wide"), start=1):
            self.path_accuracy[path].update_state(y, y_pred[:, index], sample_weight)
        return super().compute_metrics(x, y, y_pred[:, 0], sample_weight)

    def train_phase(self, phase: str) -> None:
        """What trains in a phase: "head" the head alone; "full" everything but the embeddings
        and the bottom config.frozen_layers blocks (with frozen_layers > 0)."""
        if phase not in ("head", "full"):
            raise ValueError(f"phase must be 'head' or 'full', not {phase!r}")
        full = phase == "full"
        self.backbone.trainable = full
        if self.ngram_logit is not None:
            self.ngram_logit.trainable = full
        if full and self.config.frozen_layers:
            for name in EMBEDDING_LAYERS:
                self.backbone.get_layer(name).trainable = False
            for block in self.backbone.transformer_layers[: self.config.frozen_layers]:
                block.trainable = False


def bert_classifier(config: BertConfig, ngram_counts: np.ndarray = None) -> BertClassifier:
    """The classifier over `config.backbone_preset`'s pretrained backbone, built; with
    config.ngram_buckets, `ngram_counts` (Transform's, preprocessing/ngrams.py) set the wide
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
        if ngram_counts is None:
            raise ValueError("ngram_buckets needs Transform's n-gram class counts")
        model.ngram_logit.set_ratios(naive_bayes_ratios(ngram_counts))
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
