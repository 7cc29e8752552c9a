"""The BERT fine-tuning config and its presets (pure data: no TensorFlow, no Keras)."""
import dataclasses
from typing import Mapping

from trainer_module.family import PresetConfig


@dataclasses.dataclass(frozen=True)
class BertConfig(PresetConfig):
    """Fine-tuning in two phases: the head alone on a frozen backbone, then everything."""

    # A KerasHub preset name (weights download at run time) or a local preset directory
    # (written by `save_to_preset`). Its tokenizer and casing are used by tf.Transform.
    backbone_preset: str = "bert_tiny_en_uncased"
    sequence_length: int = 128  # [CLS] + WordPieces + [SEP]: KerasHub's fine-tuning default
    num_classes: int = 2  # negative, positive
    dropout: float = 0.1  # before the classification head, as in BERT's fine-tuning
    batch_size: int = 32  # per replica, the BERT paper's fine-tuning batch
    # Phase 1: the head only, backbone frozen: a randomly initialised head's large early
    # gradients would otherwise disturb the pretrained weights.
    head_fraction: float = 0.1  # share of the training steps: enough to settle a linear head
    head_learning_rate: float = 1e-3  # Adam's default: only the head moves
    # Phase 2: the whole model, AdamW, linear warmup then linear decay to zero.
    learning_rate: float = 2e-5  # the BERT paper's range is 2e-5 to 5e-5
    warmup_fraction: float = 0.1  # of the phase-2 steps, the BERT paper's
    weight_decay: float = 0.01  # the BERT paper's; biases and LayerNorm are exempt
    evaluations: int = 2  # validation passes per phase

    def __post_init__(self):
        if not 0.0 <= self.head_fraction < 1.0:
            raise ValueError(f"head_fraction must be in [0, 1), not {self.head_fraction}")
        if self.sequence_length < 3:
            raise ValueError("sequence_length must leave room for [CLS] and [SEP]")


PRESETS: Mapping[str, BertConfig] = {
    # For tests and offline runs: pair with a local tiny preset (tiny_preset.py).
    "tiny": BertConfig(sequence_length=32, batch_size=32, head_learning_rate=1e-2,
                       learning_rate=1e-3, evaluations=1),
    # bert_tiny_en_uncased as in KerasHub's fine-tuning guides.
    "default": BertConfig(),
    # Longer inputs, as for the published IMDB numbers (bert_tiny: 0.882 at length 512).
    "long": BertConfig(sequence_length=512, batch_size=16),
}


def transform_config(config: BertConfig) -> dict:
    """What the preprocessing_fn reads from Transform's custom_config."""
    return {"backbone_preset": config.backbone_preset, "sequence_length": config.sequence_length}
