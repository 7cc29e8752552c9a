"""The base of every model built from one typed config (`self.config`)."""

from typing import TYPE_CHECKING, ClassVar, Type

import keras

if TYPE_CHECKING:
    from trainer_module.family import PresetConfig


class ConfiguredModel(keras.Model):
    """A Keras model whose constructor takes its family's config (trainer_module/family.py:
    PresetConfig) first: Keras' get_config / from_config round trip through the config's plain
    dict (saving, `keras.models.clone_model`, the warm start's weights file)."""

    config_class: ClassVar[Type["PresetConfig"]]  # the family's config dataclass

    def get_config(self):
        return {**super().get_config(), "config": self.config.to_dict()}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        return cls(cls.config_class.from_dict(config.pop("config")), **config)
