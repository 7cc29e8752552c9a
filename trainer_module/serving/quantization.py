"""int8 exports: the trained model's matrix products stored and run in int8 (ExportConfig's
`quantize`), through Keras' own quantization.

Keras' int8 Dense and EinsumDense keep each kernel as int8 with one float scale per output unit
(absmax), and quantize each call's inputs per row; the product runs int8 x int8 with int32
accumulation and is scaled back to float. Only those layers change: embeddings (the tied output
projection of the translator reads its table), norms and the wide path's n-gram weights stay as
trained.
"""

from typing import Optional

import keras

from trainer_module import compat
from trainer_module.layers.dense import Dense

# Exact types, as Keras' own Model.quantize takes them (a subclass may compute something else
# from its kernel), and the project's Dense, which only reshapes around keras.layers.Dense's
# call (layers/dense.py).
QUANTIZED_TYPES = (keras.layers.Dense, keras.layers.EinsumDense, Dense)


def quantizable_layers(model: keras.Model) -> list:
    """The Dense and EinsumDense layers of the built `model`, however deeply nested."""
    return [layer for layer in compat.leaf_layers(model) if type(layer) in QUANTIZED_TYPES]


def quantize(model: keras.Model, mode: Optional[str]) -> int:
    """Quantizes every Dense and EinsumDense of the built `model` in place to `mode` (None:
    nothing). Returns how many layers it quantized."""
    if mode is None:
        return 0
    layers = quantizable_layers(model)
    if not layers:
        raise ValueError(f"{type(model).__name__} has no Dense or EinsumDense layer to quantize")
    for layer in layers:
        layer.quantize(mode, type_check=False)
    # Functions compiled before hold the float kernels, which quantize removed.
    model.train_function = model.test_function = model.predict_function = None
    return len(layers)
