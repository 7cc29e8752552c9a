"""The optimizers the model families use: AdamW everywhere, Nesterov SGD for airbench's
CIFAR-10 recipe."""

from typing import TYPE_CHECKING, Mapping

import keras


def adamw(
    learning_rate,
    weight_decay: float,
    ema_momentum: float = 0.0,
    ema_every: int = 0,
    scales: Mapping[str, float] | None = None,
) -> keras.optimizers.AdamW:
    """AdamW with gradient clipping; no weight decay on biases and LayerNorm scales/offsets.

    With `ema_momentum` > 0 it also keeps an exponential moving average of the weights
    (Polyak averaging), which validation uses and training ends with (Keras swaps it in at the
    end of `fit`): the average of the last ~1 / (1 - momentum) steps' weights. With `ema_every`
    = N > 0 the weights are also reset to the average every N steps (lookahead, as airbench).
    Each variable in `scales` (path: scale) takes scale x the learning rate in its gradient
    step (ScaledAdamW: a pretrained encoder's layer-wise decay).
    """
    optimizer = (ScaledAdamW if scales else keras.optimizers.AdamW)(
        learning_rate=learning_rate,
        weight_decay=weight_decay,
        clipnorm=1.0,
        **({"scales": scales} if scales else {}),
        **ema(ema_momentum, ema_every),
    )
    optimizer.exclude_from_weight_decay(var_names=["bias", "gamma", "beta"])
    return optimizer


def nesterov_sgd(
    learning_rate,
    momentum: float,
    weight_decay: float,
    scales: Mapping[str, float] | None = None,
    ema_momentum: float = 0.0,
    ema_every: int = 0,
) -> "ScaledSGD":
    """Nesterov SGD with decoupled weight decay (Keras's: w -= w x decay x learning rate) on every
    weight but LayerNorm scales/offsets and biases; each variable in `scales` (path: scale) takes
    scale x the learning rate in its gradient step (airbench's fast BatchNorm offsets; the
    hybrid's slow Transformer). EMA as in `adamw`."""
    optimizer = ScaledSGD(
        scales=scales,
        learning_rate=learning_rate,
        momentum=momentum,
        nesterov=True,
        weight_decay=weight_decay,
        **ema(ema_momentum, ema_every),
    )
    optimizer.exclude_from_weight_decay(var_names=["bias", "gamma"])
    return optimizer


def ema(momentum: float, every: int) -> dict:
    """Keras optimizers' arguments for an average of the weights (none when momentum is 0)."""
    return {
        "use_ema": momentum > 0,
        "ema_momentum": momentum or 0.99,
        "ema_overwrite_frequency": every or None,
    }


if TYPE_CHECKING:  # what the mixin is mixed into, for the type checker
    from keras.optimizers import Optimizer as _Optimizer
else:
    _Optimizer = object


class ScaledLearningRates(_Optimizer):
    """Mixed into a Keras optimizer: the variables named in `scales` (by path) take their scale x
    the learning rate in their gradient step, not in their weight decay."""

    def __init__(self, scales: Mapping[str, float] | None = None, **kwargs):
        super().__init__(**kwargs)
        self.scales = {path: float(scale) for path, scale in (scales or {}).items()}

    def update_step(self, gradient, variable, learning_rate):
        # The backend passes its own variable (TensorFlow's), which has no path: look it up.
        path = self._trainable_variables[self._get_variable_index(variable)].path
        if path in self.scales:
            learning_rate = learning_rate * self.scales[path]
        super().update_step(gradient, variable, learning_rate)

    def get_config(self):
        return {**super().get_config(), "scales": self.scales}


@keras.saving.register_keras_serializable(package="tfx_transformers")
class ScaledSGD(ScaledLearningRates, keras.optimizers.SGD):
    """SGD with scaled learning rates (airbench's `bias_scaler`: a BatchNorm without a scale
    learns its offset 64 times faster than the convolutions, whose scale it fixes)."""


@keras.saving.register_keras_serializable(package="tfx_transformers")
class ScaledAdamW(ScaledLearningRates, keras.optimizers.AdamW):
    """AdamW with scaled learning rates (a pretrained encoder's lower blocks learning slower:
    layer-wise learning-rate decay, Howard and Ruder 2018, Sun et al. 2019)."""
