"""The optimizer every model family uses."""
import keras


def adamw(learning_rate, weight_decay: float) -> keras.optimizers.AdamW:
    """AdamW with gradient clipping; no weight decay on biases and LayerNorm scales/offsets."""
    optimizer = keras.optimizers.AdamW(learning_rate=learning_rate, weight_decay=weight_decay,
                                       clipnorm=1.0)
    optimizer.exclude_from_weight_decay(var_names=["bias", "gamma", "beta"])
    return optimizer
