"""The from-scratch text encoder's typed config, its presets and its Tuner search space (pure
data: no TensorFlow, no Keras)."""

import dataclasses
from typing import ClassVar, Mapping, Tuple

from trainer_module.family import (
    ExportConfig,
    PresetConfig,
    PretrainingConfig,
    RuntimesConfig,
    WidePathConfig,
    check_decay,
    default_search_space,
)

# Ids below the vocabulary: 0 pads, and one out-of-vocabulary bucket sits after the words.
PAD_ID = 0
NUM_OOV_BUCKETS = 1  # every word outside the vocabulary shares one id


@dataclasses.dataclass(frozen=True)
class TextEncoderConfig(
    ExportConfig, RuntimesConfig, PretrainingConfig, WidePathConfig, PresetConfig
):
    """Every knob of the text encoder classifier and its training, with why it has its value."""

    # Vocabulary and input: shared by tf.Transform (which builds the ids) and the model.
    # Words kept (top-k). IMDB has ~100k word types; 20k cover ~97% of its tokens. The Trainer
    # sets the number Transform actually kept (fewer on a small corpus).
    vocab_size: int = 20_000
    max_length: int = 256  # tokens kept per review; the median IMDB review is ~230 words
    # Of those, from the beginning; the rest from the end (verdicts). Unless set, it keeps its
    # share of max_length when that is changed (--set max_length=128: 32).
    truncation_head: int = 64
    FOLLOWS_LENGTH: ClassVar[Mapping[str, Tuple[str, int]]] = {"truncation_head": ("max_length", 0)}
    # Architecture.
    d_model: int = 64  # small on purpose: 25k reviews overfit wider models within one epoch
    num_heads: int = 4  # 16 dimensions per head at d_model 64
    ff_dim: int = 128  # 2 x d_model: kept as narrow as the model
    num_layers: int = 2  # the depth of the README benchmark (0.88 on IMDB validation)
    dropout: float = 0.1  # on embeddings, sublayer outputs and inside the feed-forward network
    token_dropout: float = 0.0  # share of words blanked in training (word dropout); 0: off
    attention_dropout: float = 0.0  # on attention weights: a third of the CPU step time at T=256
    norm_first: bool = False  # post-norm as in Vaswani et al.; pre-norm for deeper stacks
    positional: str = "sinusoidal"  # "sinusoidal" (fixed, no parameters) or "learned"
    pooling: str = "mean"  # "mean" (masked mean over tokens) or "cls" (a learned [CLS] vector)
    num_classes: int = 2  # negative, positive
    # The wide path's fields (ngram_buckets, ...) are WidePathConfig's, and pretraining's
    # (pretrain_epochs, ...) PretrainingConfig's, the export's (quantize) ExportConfig's:
    # trainer_module/family.py.
    # Optimisation: AdamW with linear warmup, then a decay.
    batch_size: int = 32  # per replica; small batches regularise this small model
    peak_learning_rate: float = 1e-3  # reached at the end of warmup
    # Of the training steps: 300 of the recipe's 1,248 (2 epochs of IMDB's 19,963 training
    # reviews at batch 32), about half an epoch.
    warmup_fraction: float = 0.24
    decay: str = "inverse_sqrt"  # after warmup (trainer_module/family.py: DECAYS)
    weight_decay: float = 0.01  # AdamW's default scale; biases and LayerNorm are exempt
    ema_momentum: float = 0.0  # > 0: validate and export an average of the weights; 0: off
    label_smoothing: float = 0.0  # off: the probabilities are served as calibrated scores
    evaluations: int = 4  # validation passes spread over the training steps (Keras "epochs")

    def __post_init__(self):
        if self.positional not in ("sinusoidal", "learned"):
            raise ValueError(
                f"positional must be 'sinusoidal' or 'learned', not {self.positional!r}"
            )
        check_decay(self.decay)
        if self.pooling not in ("mean", "cls"):
            raise ValueError(f"pooling must be 'mean' or 'cls', not {self.pooling!r}")
        if not 0 <= self.truncation_head <= self.max_length:
            raise ValueError(
                f"truncation_head={self.truncation_head} must be between 0 and "
                f"max_length={self.max_length}"
            )
        if self.d_model % self.num_heads:
            raise ValueError(
                f"d_model={self.d_model} must be divisible by num_heads={self.num_heads}"
            )
        self.check_wide_path()
        self.check_pretraining()
        self.check_quantize()
        self.check_serving_runtimes()

    @property
    def embedding_rows(self) -> int:
        """Ids the model embeds: padding, the vocabulary, the out-of-vocabulary bucket, and
        with pretraining the mask id (`mask_id`)."""
        return 1 + self.vocab_size + NUM_OOV_BUCKETS + (1 if self.pretrain_epochs else 0)

    @property
    def mask_id(self) -> int:
        """The id of a masked token in pretraining: the row after the out-of-vocabulary
        bucket, which no text maps to."""
        return 1 + self.vocab_size + NUM_OOV_BUCKETS


PRESETS: Mapping[str, TextEncoderConfig] = {
    # For tests: a model that builds and trains a step in about a second.
    "tiny": TextEncoderConfig(
        vocab_size=500,
        max_length=32,
        truncation_head=8,
        d_model=16,
        num_heads=2,
        ff_dim=32,
        num_layers=1,
        batch_size=8,
        warmup_fraction=0.25,
        evaluations=1,
        ngram_buckets=256,
        max_ngrams=32,
        ngram_learning_rate=0.3,
    ),
    # The default: the embedded corpus in seconds, real IMDB on a 2-core CPU in minutes
    # (docs/benchmarks.md): one encoder block beside the wide path (with it a second block was
    # no better, at twice the Trainer's time), the rate annealed to zero.
    "small": TextEncoderConfig(decay="cosine", num_layers=1),
    # Longer inputs and more layers, for a GPU.
    "base": TextEncoderConfig(
        max_length=512,
        truncation_head=128,
        d_model=128,
        num_heads=4,
        ff_dim=512,
        num_layers=4,
        norm_first=True,
        warmup_fraction=0.25,
        ngram_buckets=0,
    ),
}

SEARCH_SPACE = default_search_space()  # the Tuner's (--tune)


def transform_config(config: TextEncoderConfig) -> dict:
    """What the preprocessing_fn reads from Transform's custom_config."""
    return {
        "vocab_size": config.vocab_size,
        "max_length": config.max_length,
        "truncation_head": config.truncation_head,
        **config.wide_transform_config(config.num_classes),
    }
