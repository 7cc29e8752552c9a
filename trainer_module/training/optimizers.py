"""The optimizer every model family uses."""

import keras


def adamw(learning_rate, weight_decay: float, ema_momentum: float = 0.0) -> keras.optimizers.AdamW:
    """AdamW with gradient clipping; no weight decay on biases and LayerNorm scales/offsets.

    With `ema_momentum` > 0 it also keeps an exponential moving average of the weights
    (Polyak averaging), which validation uses and training ends with (Keras swaps it in at the
    end of `fit`): the average of the last ~1 / (1 - momentum) steps' weights.
    """
    optimizer = keras.optimizers.AdamW(
        learning_rate=learning_rate,
        weight_decay=weight_decay,
        clipnorm=1.0,
        use_ema=ema_momentum > 0,
        ema_momentum=ema_momentum or 0.99,
    )
    optimizer.exclude_from_weight_decay(var_names=["bias", "gamma", "beta"])
    return optimizer
