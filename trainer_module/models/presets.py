"""Typed hyperparameters for the from-scratch text encoder, and its named presets."""
import dataclasses
from typing import Any, Mapping


class PresetConfig:
    """Shared by the typed configs: overrides that refuse unknown names, and a plain dict."""

    def replace(self, **overrides: Any):
        """A copy with `overrides` applied; unknown names are an error, not silently ignored."""
        known = {f.name for f in dataclasses.fields(self)}
        unknown = sorted(set(overrides) - known)
        if unknown:
            raise ValueError(f"unknown {type(self).__name__} fields: {unknown}; "
                             f"known: {sorted(known)}")
        return dataclasses.replace(self, **overrides)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class TextEncoderConfig(PresetConfig):
    """Every knob of the text encoder classifier and its training, with why it has its value."""

    # Vocabulary and input: shared by tf.Transform (which builds the ids) and the model.
    vocab_size: int = 20_000  # top-k words kept; IMDB has ~100k types, 20k cover ~97% of tokens
    max_length: int = 256  # tokens kept per review; the median IMDB review is ~230 words
    truncation_head: int = 64  # of those, from the beginning; the rest from the end (verdicts)
    # Architecture.
    d_model: int = 64  # small on purpose: 25k reviews overfit wider models within one epoch
    num_heads: int = 4
    ff_dim: int = 128
    num_layers: int = 2
    dropout: float = 0.1  # on embeddings, sublayer outputs and inside the feed-forward network
    attention_dropout: float = 0.0  # on attention weights: a third of the CPU step time at T=256
    norm_first: bool = False  # post-norm as in Vaswani et al.; pre-norm for deeper stacks
    positional: str = "sinusoidal"  # "sinusoidal" (fixed) or "learned"
    pooling: str = "mean"  # "mean" (masked mean over tokens) or "cls" (a learned [CLS] vector)
    num_classes: int = 2
    # Optimisation: AdamW with linear warmup then inverse-square-root decay.
    batch_size: int = 32
    peak_learning_rate: float = 1e-3  # reached at the end of warmup
    warmup_steps: int = 300  # ~half an epoch of 20k reviews at batch 32
    weight_decay: float = 0.01
    label_smoothing: float = 0.0
    evaluations: int = 4  # validation passes spread over the training steps (Keras "epochs")

    def __post_init__(self):
        if self.positional not in ("sinusoidal", "learned"):
            raise ValueError(f"positional must be 'sinusoidal' or 'learned', not {self.positional!r}")
        if self.pooling not in ("mean", "cls"):
            raise ValueError(f"pooling must be 'mean' or 'cls', not {self.pooling!r}")
        if not 0 <= self.truncation_head <= self.max_length:
            raise ValueError(f"truncation_head={self.truncation_head} must be between 0 and "
                             f"max_length={self.max_length}")
        if self.d_model % self.num_heads:
            raise ValueError(f"d_model={self.d_model} must be divisible by num_heads={self.num_heads}")


PRESETS: Mapping[str, TextEncoderConfig] = {
    # For tests: a model that builds and trains a step in about a second.
    "tiny": TextEncoderConfig(vocab_size=500, max_length=32, truncation_head=8, d_model=16, num_heads=2, ff_dim=32,
                              num_layers=1, batch_size=8, warmup_steps=10, evaluations=1),
    # The default: the embedded corpus in seconds, real IMDB at >= 0.88 on a 2-core CPU.
    "small": TextEncoderConfig(),
    # Longer inputs and more layers, for a GPU.
    "base": TextEncoderConfig(max_length=512, truncation_head=128, d_model=128, num_heads=4, ff_dim=512, num_layers=4,
                              norm_first=True, warmup_steps=1000),
}


def get_preset(name: str, overrides: Mapping[str, Any] | None = None) -> TextEncoderConfig:
    """The preset called `name`, with `overrides` applied."""
    if name not in PRESETS:
        raise ValueError(f"unknown preset {name!r}; choose one of {sorted(PRESETS)}")
    return PRESETS[name].replace(**dict(overrides or {}))
