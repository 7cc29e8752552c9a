"""Where a BERT comes from: a KerasHub preset, or a Hugging Face checkpoint.

`backbone_preset` may name
- a KerasHub preset: a name (`bert_tiny_en_uncased`, downloaded at run time) or a folder that
  `save_to_preset` wrote; KerasHub's `from_preset` loads it;
- a Hugging Face checkpoint in Transformers' layout (a local folder, `gs://...` or
  `hf://owner/name`): `config.json` with `model_type: bert`, `model.safetensors` (or shards
  named by `model.safetensors.index.json`), `vocab.txt`, `tokenizer_config.json`.

A checkpoint is ported with KerasHub's own BERT converter (`convert_bert.convert_weights`)
through a loader that maps the names the converter asks for (`bert.` prefix, LayerNorm
`gamma`/`beta`: checkpoints saved from `BertForPreTraining` by the original scripts) onto the
names the checkpoint has (checkpoints saved from `BertModel`: no prefix, `weight`/`bias`), and
checks that every weight of the checkpoint found its variable and every variable its weight.
The checkpoint's `hidden_act` and `layer_norm_eps` are kept (KerasHub's BERT computes the
tanh approximation of GELU; Transformers' "gelu" is the exact one).
"""

import os
from typing import Dict, List, Optional

import keras
import keras_hub
from absl import logging

from trainer_module import compat

CONFIG_FILE = "config.json"
WEIGHTS_FILE = "model.safetensors"
WEIGHTS_INDEX_FILE = "model.safetensors.index.json"
VOCABULARY_FILE = "vocab.txt"
TOKENIZER_CONFIG_FILE = "tokenizer_config.json"
# How the original BERT scripts named what Transformers' BertModel names otherwise.
PREFIX = "bert."
RENAMES = (("LayerNorm.gamma", "LayerNorm.weight"), ("LayerNorm.beta", "LayerNorm.bias"))
# In a checkpoint, but not weights of the backbone: a buffer of position ids, and the heads of
# the pretraining and task models (BertForPreTraining's `cls.`, BertFor...Classification's
# `classifier.`), which fine-tuning replaces.
BUFFERS = ("embeddings.position_ids",)
HEADS = ("cls.", "classifier.")
# Transformers' activation names -> whether GELU is exact (erf) or its tanh approximation.
GELU_EXACT = {"gelu": True, "gelu_new": False, "gelu_pytorch_tanh": False, "gelu_fast": False}


class CheckpointError(ValueError):
    """A checkpoint that cannot be ported as it is; the message names the file and the key."""


def is_transformers_checkpoint(preset: str) -> bool:
    """Whether `preset` is a Hugging Face checkpoint (a folder or URI whose config.json has a
    `model_type`) rather than a KerasHub preset. Preset names are not looked up: never a
    download to find out."""
    if "://" not in preset and not os.path.isdir(preset):
        if os.sep in preset or preset.startswith("."):
            raise FileNotFoundError(f"BERT preset {preset}: no such folder")
        return False  # a KerasHub preset name
    if not compat.check_file_exists(preset, CONFIG_FILE):
        raise FileNotFoundError(
            f"{_join(preset, CONFIG_FILE)} not found: {preset} is neither "
            "a KerasHub preset nor a Hugging Face checkpoint"
        )
    return "model_type" in compat.load_json(preset, CONFIG_FILE)


def load_backbone(preset: str) -> keras_hub.models.BertBackbone:
    """The BertBackbone of `preset` (a KerasHub preset, or a Hugging Face checkpoint) with its
    pretrained weights."""
    if not is_transformers_checkpoint(preset):
        return keras_hub.models.BertBackbone.from_preset(preset)
    config = transformers_config(preset)
    backbone = keras_hub.models.BertBackbone(
        **compat.convert_bert.convert_backbone_config(config),
        max_sequence_length=config["max_position_embeddings"],
        num_segments=config.get("type_vocab_size", 2),
        dropout=config.get("hidden_dropout_prob", 0.1),
    )
    _keep_activation_and_epsilon(backbone, config)
    with SafetensorsCheckpoint(preset) as checkpoint:
        compat.convert_bert.convert_weights(backbone, checkpoint, config)
        checkpoint.check_complete(backbone)
    return backbone


def load_tokenizer(preset: str) -> keras_hub.models.BertTokenizer:
    """The WordPiece tokenizer of `preset`: a KerasHub preset's, or a checkpoint's vocab.txt
    with its tokenizer_config.json's casing (`do_lower_case`, default true as in Transformers;
    accents stripped with lower-casing unless `strip_accents` says otherwise)."""
    if not is_transformers_checkpoint(preset):
        return keras_hub.models.BertTokenizer.from_preset(preset)
    settings = (
        compat.load_json(preset, TOKENIZER_CONFIG_FILE)
        if compat.check_file_exists(preset, TOKENIZER_CONFIG_FILE)
        else {}
    )
    lowercase = bool(settings.get("do_lower_case", True))
    strip_accents = settings.get("strip_accents")
    return keras_hub.models.BertTokenizer(
        vocabulary=compat.get_file(preset, VOCABULARY_FILE),
        lowercase=lowercase,
        strip_accents=lowercase if strip_accents is None else bool(strip_accents),
    )


def transformers_config(preset: str) -> dict:
    """The checkpoint's config.json, refused where KerasHub's BertBackbone cannot compute the
    same model."""
    config = compat.load_json(preset, CONFIG_FILE)
    where = _join(preset, CONFIG_FILE)
    if config.get("model_type") != "bert":
        raise CheckpointError(
            f"{where}: model_type {config.get('model_type')!r}; the bert "
            "family loads BERT checkpoints (model_type 'bert')"
        )
    if config.get("hidden_act", "gelu") not in GELU_EXACT:
        raise CheckpointError(
            f"{where}: hidden_act {config['hidden_act']!r} is not a GELU "
            f"({', '.join(GELU_EXACT)}), which BertBackbone computes"
        )
    if config.get("position_embedding_type", "absolute") != "absolute":
        raise CheckpointError(
            f"{where}: position_embedding_type "
            f"{config['position_embedding_type']!r}; BertBackbone has "
            "absolute position embeddings only"
        )
    return config


def _keep_activation_and_epsilon(backbone, config: dict) -> None:
    """The checkpoint's GELU (exact or tanh) and LayerNorm epsilon in place of KerasHub's
    (tanh, 1e-12). Layers read both when called, so the functional backbone computes them."""
    exact = GELU_EXACT[config.get("hidden_act", "gelu")]
    epsilon = float(config.get("layer_norm_eps", 1e-12))
    norms = [backbone.get_layer("embeddings_layer_norm")]
    for block in backbone.transformer_layers:
        if exact:
            compat.feedforward_intermediate_dense(block).activation = _exact_gelu
        norms += compat.layer_norms(block)
    for norm in norms:
        norm.epsilon = epsilon


def _exact_gelu(x):
    return keras.activations.gelu(x, approximate=False)


class SafetensorsCheckpoint:
    """The weights of a checkpoint's safetensors file(s), by key; stands in for KerasHub's
    SafetensorLoader in its converters (`port_weight`), with the key names mapped (PREFIX,
    RENAMES), and keeps account: `check_complete` raises, naming them, for the checkpoint's
    weights that found no variable and the variables that found no weight."""

    def __init__(self, preset: str):
        self.preset = preset
        if compat.check_file_exists(preset, WEIGHTS_INDEX_FILE):
            weight_map = compat.load_json(preset, WEIGHTS_INDEX_FILE)["weight_map"]
        elif compat.check_file_exists(preset, WEIGHTS_FILE):
            weight_map = None
        else:
            raise CheckpointError(
                f"{preset}: no {WEIGHTS_FILE} (or {WEIGHTS_INDEX_FILE}); weights are read from "
                "safetensors: save the checkpoint with Transformers' "
                "save_pretrained(..., safe_serialization=True)"
            )
        self._files, self.file_of = {}, {}
        import safetensors

        for name in sorted(set(weight_map.values()) if weight_map else {WEIGHTS_FILE}):
            try:
                handle = safetensors.safe_open(compat.get_file(preset, name), framework="np")
            except Exception as error:  # a truncated or foreign file
                raise CheckpointError(
                    f"{_join(preset, name)}: not a readable safetensors file ({error})"
                ) from None
            self._files[name] = handle
            self.file_of.update(dict.fromkeys(handle.keys(), name))
        self.used: Dict[str, str] = {}  # checkpoint key -> the variable it went into
        self.missing: List[str] = []  # variables whose weight the checkpoint lacks

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._files.clear()

    def key_for(self, name: str) -> Optional[str]:
        """The checkpoint's key for the weight KerasHub's converter calls `name`, or None."""
        spellings = {name}
        for old, new in RENAMES:
            if name.endswith(old):
                spellings.add(name[: -len(old)] + new)
        spellings |= {s[len(PREFIX) :] for s in spellings if s.startswith(PREFIX)}
        found = sorted(s for s in spellings if s in self.file_of)
        if len(found) > 1:
            raise CheckpointError(
                f"{self.preset}: the checkpoint has {name} twice, as {' and '.join(found)}"
            )
        return found[0] if found else None

    def get_tensor(self, name: str):
        key = self.key_for(name)
        if key is None:
            raise CheckpointError(f"{self.preset}: no weight {name}")
        try:
            return self._files[self.file_of[key]].get_tensor(key)
        except Exception as error:
            raise CheckpointError(
                f"{_join(self.preset, self.file_of[key])}: cannot read {key} ({error})"
            ) from None

    def port_weight(self, keras_variable, hf_weight_key: str, hook_fn=None) -> None:
        key = self.key_for(hf_weight_key)
        if key is None:
            self.missing.append(f"{keras_variable.path} (as {hf_weight_key})")
            return
        tensor = self.get_tensor(key)
        if hook_fn is not None:
            tensor = hook_fn(tensor, list(keras_variable.shape))
        if tuple(tensor.shape) != tuple(keras_variable.shape):
            raise CheckpointError(
                f"{_join(self.preset, self.file_of[key])}: {key} has shape "
                f"{tuple(tensor.shape)}; {keras_variable.path} needs "
                f"{tuple(keras_variable.shape)}"
            )
        keras_variable.assign(tensor)
        self.used[key] = keras_variable.path

    def check_complete(self, backbone: keras.Model) -> None:
        """Raises CheckpointError naming every weight left over on either side."""
        ported = set(self.used.values())
        unloaded = [v.path for v in backbone.weights if v.path not in ported]
        left_out = [k for k in self.file_of if k not in self.used]
        heads = sorted(k for k in left_out if _strip_prefix(k).startswith(HEADS))
        unknown = sorted(k for k in left_out if k not in heads and _strip_prefix(k) not in BUFFERS)
        problems = []
        if self.missing:
            problems.append("no weight in the checkpoint for " + ", ".join(self.missing))
        if unloaded:
            problems.append("variables not loaded: " + ", ".join(unloaded))
        if unknown:
            problems.append("keys of no BertBackbone weight: " + ", ".join(unknown))
        if problems:
            raise CheckpointError(f"{self.preset}: " + "; ".join(problems))
        if heads:
            logging.info(
                "%s: left out the checkpoint's heads (%s), which fine-tuning replaces",
                self.preset,
                ", ".join(heads),
            )


def _strip_prefix(key: str) -> str:
    return key[len(PREFIX) :] if key.startswith(PREFIX) else key


def _join(preset: str, name: str) -> str:
    return preset.rstrip("/") + "/" + name
