"""Typed hyperparameters for the encoder-decoder Transformer, and its named presets."""
import dataclasses
from typing import Any, Mapping

from trainer_module.models.presets import PresetConfig


@dataclasses.dataclass(frozen=True)
class TranslatorConfig(PresetConfig):
    """Every knob of the translation model, its vocabularies and its training."""

    # Vocabularies and lengths: shared by tf.Transform (which builds the ids) and the model.
    source_vocab_size: int = 10_000  # top-k words kept; Multi30k de has ~7.8k words seen twice
    target_vocab_size: int = 8_000  # Multi30k en: ~5.9k words seen at least twice
    min_frequency: int = 2  # rarer words become [UNK] (as in the published Multi30k recipes)
    shared_vocabulary: bool = False  # one vocabulary over both languages (and one embedding)
    max_source_length: int = 40  # tokens; 99.9% of Multi30k sentences are shorter
    max_target_length: int = 40  # including [START] / [END]
    # Architecture.
    d_model: int = 256
    num_heads: int = 8
    ff_dim: int = 512
    encoder_layers: int = 3
    decoder_layers: int = 3
    dropout: float = 0.1
    norm_first: bool = True  # pre-norm (+ a final LayerNorm): trains stably at a higher rate
    positional: str = "sinusoidal"  # "sinusoidal" or "learned"
    tie_output_embeddings: bool = True  # the output projection reuses the target embedding
    # Optimisation: AdamW, linear warmup then inverse-square-root decay.
    batch_size: int = 128
    peak_learning_rate: float = 1e-3
    warmup_steps: int = 600
    weight_decay: float = 0.01
    label_smoothing: float = 0.1
    evaluations: int = 4  # validation passes spread over the training steps
    # Decoding in the served model.
    max_decode_length: int = 40  # generated tokens at most, [END] included
    beam_width: int = 4  # 1 = greedy

    def __post_init__(self):
        if self.positional not in ("sinusoidal", "learned"):
            raise ValueError(f"positional must be 'sinusoidal' or 'learned', not {self.positional!r}")
        if self.d_model % self.num_heads:
            raise ValueError(f"d_model={self.d_model} must be divisible by num_heads={self.num_heads}")
        if self.max_target_length < 2:
            raise ValueError("max_target_length must leave room for [START]/[END] and a token")
        if self.beam_width < 1:
            raise ValueError(f"beam_width must be >= 1, not {self.beam_width}")


PRESETS: Mapping[str, TranslatorConfig] = {
    # For tests: builds and trains a step in about a second.
    "tiny": TranslatorConfig(source_vocab_size=200, target_vocab_size=200, min_frequency=1,
                             max_source_length=16, max_target_length=16, d_model=32,
                             num_heads=2, ff_dim=64, encoder_layers=1, decoder_layers=1,
                             batch_size=16, warmup_steps=20, max_decode_length=16,
                             beam_width=2, evaluations=1),
    # The embedded corpus in a few minutes on a CPU.
    "small": TranslatorConfig(min_frequency=1, d_model=64, num_heads=4, ff_dim=128,
                              encoder_layers=2, decoder_layers=2, batch_size=32,
                              warmup_steps=100, max_decode_length=24, max_source_length=24,
                              max_target_length=24),
    # Multi30k: the 3+3-layer, d_model 256 model of the published anchor.
    "base": TranslatorConfig(),
}


def get_preset(name: str, overrides: Mapping[str, Any] | None = None) -> TranslatorConfig:
    """The preset called `name`, with `overrides` applied."""
    if name not in PRESETS:
        raise ValueError(f"unknown preset {name!r}; choose one of {sorted(PRESETS)}")
    return PRESETS[name].replace(**dict(overrides or {}))
