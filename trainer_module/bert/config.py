"""The BERT fine-tuning config and its presets (pure data: no TensorFlow, no Keras)."""

import dataclasses
from typing import ClassVar, Mapping, Optional, Tuple

from trainer_module.family import (
    ExportConfig,
    PresetConfig,
    PretrainingConfig,
    RuntimesConfig,
    WidePathConfig,
)

# Passes over the training split of the measured recipe, on any data (ModelFamily's
# recipe_epochs): the BERT paper fine-tunes for 2 to 4; 2 reached 0.932 on IMDB's held-out
# training reviews (docs/models/bert.md).
RECIPE_EPOCHS = 2.0


@dataclasses.dataclass(frozen=True)
class BertConfig(ExportConfig, RuntimesConfig, PretrainingConfig, WidePathConfig, PresetConfig):
    """Fine-tuning in two phases: the head alone on a frozen backbone, then everything."""

    # A KerasHub preset (a name, downloaded at run time, or a save_to_preset folder) or a
    # Hugging Face BERT checkpoint (a folder, gs:// or hf://; checkpoint.py). Its tokenizer and
    # casing are what tf.Transform tokenises with.
    backbone_preset: str = "hf://sentence-transformers/all-MiniLM-L6-v2"
    # [CLS] + WordPieces + [SEP]. 256 measured better than KerasHub's fine-tuning default of 128
    # (BERT alone +1.8 points on IMDB, docs/models/bert.md); with length-grouped batches
    # (length_multiple) 320 costs what 256 padded did, and truncates 30% of IMDB's training
    # reviews instead of 41%.
    sequence_length: int = 320
    # WordPieces kept from the beginning of a longer review; the rest of the
    # sequence_length - 2 come from its end, where reviews give their verdict (Sun et al., 2019,
    # "How to Fine-Tune BERT for Text Classification?": head+tail best on IMDB). Set to
    # sequence_length - 2 to keep the beginning only. Unless set, it keeps its share of the
    # pieces when sequence_length is changed (--set sequence_length=64: 12).
    truncation_head: int = 64
    FOLLOWS_LENGTH: ClassVar[Mapping[str, Tuple[str, int]]] = {
        "truncation_head": ("sequence_length", 2)
    }
    # Training batches group reviews of similar length and carry only the padding up to the
    # next multiple of this many pieces; evaluation and serving batches are cut to their
    # longest review, rounded the same way (serving.trim_padding). 0: every batch padded to
    # sequence_length.
    length_multiple: int = 64
    num_classes: int = 2  # negative, positive
    # What the head reads: "cls", BERT's pooled [CLS] output (its pooler: dense + tanh), or
    # "mean", the mean of the last hidden states over the real tokens, which is how sentence
    # embedding checkpoints (sentence-transformers, all-MiniLM-L6-v2) were trained.
    pooling: str = "mean"
    dropout: float = 0.1  # before the classification head, as in BERT's fine-tuning
    # Dropout on the trained blocks' attention probabilities: B x heads x T x T random numbers
    # per block, the step's costliest elementwise work on a CPU. 0 trained as accurately as the
    # checkpoint's 0.1 in 0.7 of the time (docs/models/bert.md); None keeps the checkpoint's
    # (KerasHub's BERT has one rate for attention and hidden states).
    attention_dropout: Optional[float] = 0.0
    batch_size: int = 32  # per replica, the BERT paper's fine-tuning batch
    # Phase 1: the head only, backbone frozen: a randomly initialised head's large early
    # gradients would otherwise disturb the pretrained weights.
    head_fraction: float = 0.1  # share of the training steps: enough to settle a linear head
    head_learning_rate: float = 1e-3  # Adam's default: only the head moves
    # Phase 2: the whole model, AdamW, linear warmup then linear decay to zero.
    # The BERT paper's range is 2e-5 to 5e-5 for BERT-base; a 6-layer MiniLM with its bottom
    # half frozen, over one epoch, learns more at 1e-4 (measured: docs/benchmarks.md), and
    # with every block trained over 2 epochs 5e-5 scored lower and 2e-4 the same
    # (docs/models/bert.md).
    peak_learning_rate: float = 1e-4
    warmup_fraction: float = 0.1  # of the phase-2 steps, the BERT paper's
    # Task-adaptive pretraining (pretrain_epochs > 0: Gururangan et al., ACL 2020, "Don't Stop
    # Pretraining"): the backbone's masked-token training continued on the task's text before
    # fine-tuning, at a pretrained model's rate rather than a fresh encoder's.
    pretrain_learning_rate: float = 1e-4
    weight_decay: float = 0.01  # the BERT paper's; biases and LayerNorm are exempt
    # > 0: phase 2 validates and exports an exponential moving average of the weights (the
    # average of the last ~1 / (1 - momentum) steps); its history also gives the raw weights'
    # validation (val_raw_*). 0: off.
    ema_momentum: float = 0.0
    # < 1: layer-wise learning-rate decay in phase 2 (Sun et al., 2019: 0.95 over BERT-base's
    # 12 blocks): the top block learns at the peak rate, each block below at this factor times
    # the one above, the embeddings at this factor times the lowest block. The head is not
    # scaled. 1: every layer at the same rate.
    layer_decay: float = 1.0
    # With N > 0, the embeddings and the bottom N blocks stay frozen in phase 2 too: the
    # backward pass stops above them (N = 3 of 6: steps about 1.5x faster on a CPU). Training
    # every block (0) gave BERT alone 1.6 points more, the combination 0.6 (docs/models/bert.md).
    frozen_layers: int = 0
    # Training steps compiled by XLA, which fuses the elementwise work (GELU, layer norm) that
    # dominates a CPU step: 1.5x faster steps at 256 pieces (docs/benchmarks/imdb.md#bert-steps).
    # Keras leaves XLA off on machines without an accelerator unless asked.
    jit_compile: bool = True
    evaluations: int = 1  # validation passes in phase 2 (phase 1 has none)
    # The wide path's fields (ngram_buckets, ...) are WidePathConfig's, the export's (quantize)
    # ExportConfig's: trainer_module/family.py.

    def __post_init__(self):
        self.check_pretraining()
        self.check_quantize()
        self.check_serving_runtimes()
        if self.pretrain_objective != "masked":
            raise ValueError(
                "BERT pretrains by masked-token prediction only: the replaced-token sampler "
                "draws ids by frequency rank, and WordPiece ids are not ranked by frequency"
            )
        if not 0.0 <= self.head_fraction < 1.0:
            raise ValueError(f"head_fraction must be in [0, 1), not {self.head_fraction}")
        if self.sequence_length < 3:
            raise ValueError("sequence_length must leave room for [CLS] and [SEP]")
        if not 0 <= self.truncation_head <= self.sequence_length - 2:
            raise ValueError(
                f"truncation_head={self.truncation_head} must be between 0 and "
                f"sequence_length - 2 = {self.sequence_length - 2}"
            )
        if self.pooling not in ("cls", "mean"):
            raise ValueError(f"pooling must be 'cls' or 'mean', not {self.pooling!r}")
        if self.attention_dropout is not None and not 0.0 <= self.attention_dropout < 1.0:
            raise ValueError(f"attention_dropout must be in [0, 1), not {self.attention_dropout}")
        if self.length_multiple < 0:
            raise ValueError(f"length_multiple must be 0 or more, not {self.length_multiple}")
        if not 0.0 <= self.ema_momentum < 1.0:
            raise ValueError(f"ema_momentum must be in [0, 1), not {self.ema_momentum}")
        if not 0.0 < self.layer_decay <= 1.0:
            raise ValueError(f"layer_decay must be in (0, 1], not {self.layer_decay}")
        if self.frozen_layers < 0:
            raise ValueError(f"frozen_layers must be 0 or more, not {self.frozen_layers}")
        self.check_wide_path()


PRESETS: Mapping[str, BertConfig] = {
    # For tests and offline runs: pair with a local tiny preset (lab/tiny_bert.py).
    "tiny": BertConfig(
        sequence_length=32,
        truncation_head=8,
        batch_size=32,
        head_learning_rate=1e-2,
        peak_learning_rate=1e-3,
        ngram_buckets=256,
        max_ngrams=32,
        ngram_learning_rate=0.3,
        # The tiny checkpoints have 2 blocks; the pooler, which the default recipe does not
        # use, stays covered end to end.
        frozen_layers=0,
        pooling="cls",
    ),
    # The best measured recipe (docs/benchmarks/imdb.md#bert): all-MiniLM-L6-v2, 320 pieces (head 64
    # + tail) in length-grouped batches, mean pooling, every block trained, no attention
    # dropout, the wide path on its own loss.
    "default": BertConfig(),
    # Longer inputs, as for the published IMDB numbers (not measured here: 512 pieces cost
    # about twice the default's time per step on a CPU).
    "long": BertConfig(sequence_length=512, truncation_head=128, batch_size=16),
}


def transform_config(config: BertConfig) -> dict:
    """What the preprocessing_fn reads from Transform's custom_config."""
    return {
        "backbone_preset": config.backbone_preset,
        "sequence_length": config.sequence_length,
        "truncation_head": config.truncation_head,
        **config.wide_transform_config(config.num_classes),
    }
