"""The one place the project reaches into Keras' and KerasHub's internals. Each accessor says
what it reads; tests/test_compat.py checks every one against the installed versions, so that an
upgrade which moves one fails there, by name, rather than inside a training run."""

import keras

# KerasHub's preset file utilities and its BERT converter, which its public API does not export
# (the BERT family ports Hugging Face checkpoints with KerasHub's own converter): imported when
# first used, so that the other families never load KerasHub.
KERAS_HUB = {
    "check_file_exists": "keras_hub.src.utils.preset_utils",
    "get_file": "keras_hub.src.utils.preset_utils",
    "load_json": "keras_hub.src.utils.preset_utils",
    "convert_bert": "keras_hub.src.utils.transformers.convert_bert",  # the module itself
}


def __getattr__(name: str):
    if name not in KERAS_HUB:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    module = importlib.import_module(KERAS_HUB[name])
    return module if module.__name__.endswith(f".{name}") else getattr(module, name)


def learning_rate_schedule(optimizer):
    """The optimizer's LearningRateSchedule, or None (a constant rate): Keras keeps it as
    `_learning_rate`, its public `learning_rate` being the value at the current step."""
    schedule = getattr(optimizer, "_learning_rate", None)
    if isinstance(schedule, keras.optimizers.schedules.LearningRateSchedule):
        return schedule
    return None


def initial_epoch(model) -> int:
    """The epoch `fit` started from: BackupAndRestore sets `_initial_epoch` when it restores."""
    return model._initial_epoch


def autocasts(variable) -> bool:
    """Whether Keras casts `variable` to its layer's compute dtype when the layer reads it (a
    mixed-precision model's kernels; not LayerNorm's float32 scales)."""
    return variable._autocast


def set_attention_dropout(block, rate: float) -> None:
    """The attention-probability dropout of a KerasHub TransformerEncoder, which has one rate
    for attention and hidden states: its Keras MultiHeadAttention reads `_dropout` when called
    (at 0 it skips the dropout) and `_dropout_layer` applies it."""
    attention = block._self_attention_layer
    attention._dropout = rate
    attention._dropout_layer.rate = rate


def feedforward_intermediate_dense(block):
    """A KerasHub TransformerEncoder's first feed-forward Dense (its activation is the GELU)."""
    return block._feedforward_intermediate_dense


def layer_norms(block) -> list:
    """A KerasHub TransformerEncoder's two LayerNorms (after attention, after feed-forward)."""
    return [block._self_attention_layer_norm, block._feedforward_layer_norm]


def leaf_layers(model) -> list:
    """Every layer of `model` that holds no layers of its own, however deeply nested (what
    Keras' Model.quantize walks): Keras keeps the walk as `_flatten_layers`."""
    return [layer for layer in model._flatten_layers() if len(list(layer._flatten_layers())) == 1]
