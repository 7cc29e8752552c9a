"""A Vision Transformer from scratch (Dosovitskiy et al., 2021), with the Compact Convolutional
Transformer's options for small data (Hassani et al., 2021): a convolutional tokenizer and
sequence pooling; the ViT paper's hybrid (tokens from a small CNN's feature map); flip
test-time augmentation."""

import keras
import numpy as np
from keras import ops

from trainer_module.layers import Dense, Dropout, EncoderStack, LearnedPositionalEmbedding
from trainer_module.layers.configured import ConfiguredModel
from trainer_module.training.optimizers import adamw, nesterov_sgd
from trainer_module.training.schedules import Triangular, warmup_cosine, warmup_steps
from trainer_module.vit.config import VitConfig

WHITENING_IMAGES = 5_000  # training images for the patch-whitening statistics (airbench's)


class VitClassifier(ConfiguredModel):
    """Images -> tokens -> [CLS] + learned positions -> pre-norm blocks -> LayerNorm -> head.

    Args:
        config: VitConfig. The tokenizer, encoder shape, pooling and number of classes.

    Call arguments:
        images: float (B, S, S, 3), S = config.image_size, normalized by Transform.

    Returns:
        Logits (B, num_classes).

    Example:
    >>> from trainer_module.vit.config import PRESETS
    >>> model = VitClassifier(PRESETS["tiny"])
    >>> tuple(model(ops.zeros((2, 16, 16, 3))).shape)
    (2, 10)
    """

    config_class = VitConfig

    def __init__(self, config: VitConfig, **kwargs):
        super().__init__(**kwargs)
        self.config = config
        if config.tokenizer == "patch":
            # One linear projection per non-overlapping patch, as a strided convolution.
            self.tokenizer_layers = [
                keras.layers.Conv2D(
                    config.d_model,
                    config.patch_size,
                    strides=config.patch_size,
                    name="patch_embedding",
                )
            ]
        elif config.tokenizer == "hybrid" and config.stem_pooling:
            self.tokenizer_layers = pooled_stem(config)
        elif config.tokenizer == "hybrid":
            self.tokenizer_layers = []
            for i in range(config.conv_layers):
                filters = stage_width(config, i)
                for strides, part in ((1, "a"), (2, "b")):
                    whitening = i == 0 and part == "a" and config.whitening_kernel > 0
                    kernel, width = 3, filters
                    if whitening:  # frozen; whiten() sets it from training images
                        kernel, width = config.whitening_kernel, 6 * config.whitening_kernel**2
                    self.tokenizer_layers += [
                        keras.layers.Conv2D(
                            width,
                            kernel,
                            strides=strides,
                            padding="same",
                            use_bias=False,
                            trainable=not whitening,
                            name=f"stem_{i}{part}",
                        ),
                        stem_norm(config, f"stem_{i}{part}_norm"),
                        keras.layers.Activation("gelu", name=f"stem_{i}{part}_gelu"),
                    ]
        else:
            self.tokenizer_layers = []
            for i in range(config.conv_layers):
                last = i == config.conv_layers - 1
                self.tokenizer_layers += [
                    keras.layers.Conv2D(
                        config.d_model if last else config.conv_filters,
                        3,
                        padding="same",
                        use_bias=False,
                        activation="relu",
                        name=f"conv_{i}",
                    ),
                    keras.layers.MaxPooling2D(3, strides=2, padding="same", name=f"pool_{i}"),
                ]
        if config.pooling == "cls":
            self.cls_token = self.add_weight(
                name="cls_token", shape=(1, 1, config.d_model), initializer="zeros"
            )
        tokens = config.num_patches + (1 if config.pooling == "cls" else 0)
        self.position_embedding = LearnedPositionalEmbedding(tokens, name="position_embedding")
        self.embedding_dropout = Dropout(config.dropout)
        self.encoder = EncoderStack(
            config.num_layers,
            config.num_heads,
            config.mlp_dim,
            config.dropout,
            norm_first=True,
            activation="gelu",
            name="encoder",
        )
        if config.pooling == "sequence":
            self.pooling_scores = Dense(1, name="sequence_pooling")
        # Logits in float32 whatever the compute dtype (the Keras mixed-precision guide's advice).
        self.head = keras.layers.Dense(config.num_classes, dtype="float32", name="head")

    def whiten(self, images) -> None:
        """Sets the frozen first stem convolution from sample training images (N, S, S, 3)."""
        if not self.config.whitening_kernel:
            raise ValueError("whiten() needs a config with whitening_kernel > 0")
        kernel = whitening_kernel(np.asarray(images), self.config.whitening_kernel)
        self.tokenizer_layers[0].kernel.assign(kernel)

    def tokenize(self, images, training=None):
        """(B, S, S, 3) -> patch tokens (B, N, D), N = config.num_patches, row-major."""
        x = images
        for layer in self.tokenizer_layers:
            x = layer(x, training=training)
        return ops.reshape(x, (ops.shape(x)[0], -1, self.config.d_model))

    def encode(self, images, training=None):
        """(hidden (B, T, D) after the final norm, attention weights per layer (B, H, T, T)).

        T = N + 1 with [CLS] pooling, the [CLS] token at position 0; T = N otherwise.
        """
        x = self.tokenize(images, training=training)
        if self.config.pooling == "cls":
            cls = ops.broadcast_to(
                ops.cast(self.cls_token, x.dtype), (ops.shape(x)[0], 1, self.config.d_model)
            )
            x = ops.concatenate([cls, x], axis=1)
        x = self.embedding_dropout(self.position_embedding(x), training=training)
        return self.encoder(x, training=training)

    def pool(self, hidden):
        """(B, T, D) -> (B, D): the [CLS] state, or the attention-weighted mean of all tokens."""
        if self.config.pooling == "cls":
            return hidden[:, 0, :]
        scores = ops.cast(self.pooling_scores(hidden), "float32")  # (B, T, 1)
        weights = ops.softmax(scores, axis=1)  # in float32 under mixed precision
        return ops.sum(weights * ops.cast(hidden, "float32"), axis=1)

    def call(self, images, training=None):
        if training or not self.config.flip_test_time:
            return self.head(self.pool(self.encode(images, training=training)[0]))
        views, weights = test_time_views(images, self.config.translate_test_time)
        logits = self.head(self.pool(self.encode(ops.concatenate(views), training=training)[0]))
        logits = ops.reshape(logits, (len(views), -1, self.config.num_classes))
        return ops.einsum("v,vbc->bc", ops.convert_to_tensor(weights, logits.dtype), logits)


def test_time_views(images, translate: bool):
    """The views whose logits test-time augmentation averages, and their weights: the image and
    its mirror; with `translate`, airbench's also: both shifted one pixel up-left and down-right
    (reflect-padded), together weighted as much as the unshifted two."""
    mirror = ops.flip(images, axis=2)
    if not translate:
        return [images, mirror], [0.5, 0.5]
    size = ops.shape(images)[1]
    padding = [[0, 0], [1, 1], [1, 1], [0, 0]]
    shifted = []
    for view in (images, mirror):
        padded = ops.pad(view, padding, mode="reflect")
        shifted += [padded[:, :size, :size], padded[:, 2 : size + 2, 2 : size + 2]]
    return [images, mirror, *shifted], [0.25, 0.25, 0.125, 0.125, 0.125, 0.125]


def stem_norm(config: VitConfig, name: str) -> keras.layers.BatchNormalization:
    """The hybrid stem's BatchNorm: config.norm_momentum, a scale only with config.norm_scale."""
    return keras.layers.BatchNormalization(
        momentum=config.norm_momentum,
        epsilon=config.norm_epsilon,
        scale=config.norm_scale,
        name=name,
    )


def stage_width(config: VitConfig, stage: int) -> int:
    """The hybrid stem's filters in a stage: conv_filters x 2^stage, d_model in the last stage
    (and in every stage after the first with wide_stem)."""
    if stage == config.conv_layers - 1 or (stage and config.wide_stem):
        return config.d_model
    return config.conv_filters * 2**stage


def pooled_stem(config: VitConfig) -> list:
    """airbench's network up to its pooling, as the hybrid's tokenizer: [a frozen unpadded
    whitening convolution and a GELU], then per stage conv -> max-pool -> norm -> GELU -> conv
    -> norm -> GELU, stage_width's filters."""
    layers = []
    if config.whitening_kernel:  # whiten() sets it from training images
        k = config.whitening_kernel
        layers += [
            keras.layers.Conv2D(6 * k * k, k, use_bias=False, trainable=False, name="whitening"),
            keras.layers.Activation("gelu", name="whitening_gelu"),
        ]
    for i in range(config.conv_layers):
        filters = stage_width(config, i)
        for part in ("a", "b"):
            layers.append(
                keras.layers.Conv2D(
                    filters, 3, padding="same", use_bias=False, name=f"stem_{i}{part}"
                )
            )
            if part == "a":
                layers.append(keras.layers.MaxPooling2D(2, name=f"stem_{i}_pool"))
            layers += [
                stem_norm(config, f"stem_{i}{part}_norm"),
                keras.layers.Activation("gelu", name=f"stem_{i}{part}_gelu"),
            ]
    return layers


def whitening_kernel(images: np.ndarray, size: int, eps: float = 5e-4) -> np.ndarray:
    """A (size, size, C, 2 C size^2) convolution kernel that whitens size x size patches.

    Its filters are the eigenvectors v of the images' (uncentred) patch covariance, each divided
    by sqrt(eigenvalue + eps), then the same negated: over these images every output channel
    has unit second moment and the channels are uncorrelated (airbench's initialization).
    """
    images = images.astype(np.float64)
    channels = images.shape[-1]
    dims = size * size * channels
    covariance, count = np.zeros((dims, dims)), 0
    for chunk in np.array_split(images, max(1, len(images) // 256)):
        # (n, H', W', C, size, size) -> rows in the kernel's (row, column, channel) order
        windows = np.lib.stride_tricks.sliding_window_view(
            chunk,
            (size, size),
            axis=(1, 2),  # type: ignore[call-overload]  # numpy's stubs
        )
        patches = windows.transpose(0, 1, 2, 4, 5, 3).reshape(-1, dims)
        covariance += patches.T @ patches
        count += len(patches)
    eigenvalues, eigenvectors = np.linalg.eigh(covariance / count)
    scaled = eigenvectors / np.sqrt(np.maximum(eigenvalues, 0.0) + eps)  # columns are filters
    kernel = scaled.reshape(size, size, channels, dims)
    return np.concatenate([kernel, -kernel], axis=-1).astype("float32")


def learning_rate_scales(model: VitClassifier) -> dict:
    """{variable path: its multiple of SGD's learning rate} where it is not 1: the stem's
    BatchNorm offsets' norm_bias_scaler, and encoder_lr_scale for everything after the stem."""
    config, stem = model.config, model.tokenizer_layers
    scales = {v.path: config.encoder_lr_scale for v in model.trainable_variables}
    for layer in stem:
        for variable in layer.trainable_variables:
            scales[variable.path] = 1.0
        if isinstance(layer, keras.layers.BatchNormalization):
            scales[layer.beta.path] = config.norm_bias_scaler
    return {path: scale for path, scale in scales.items() if scale != 1.0}


def build_model(config: VitConfig, train_steps: int) -> keras.Model:
    """The classifier, built and compiled with its training recipe: AdamW on a warmup-cosine
    schedule or airbench's Nesterov SGD on its triangle, over train_steps; cross-entropy on
    (possibly mixed) soft labels with smoothing."""
    model = VitClassifier(config)
    model(keras.ops.zeros((1, config.image_size, config.image_size, 3)))  # build the weights
    warmup = warmup_steps(config.warmup_fraction, train_steps)
    if config.optimizer == "sgd":
        optimizer = nesterov_sgd(
            Triangular(config.peak_learning_rate, warmup, train_steps),
            config.momentum,
            config.weight_decay,
            learning_rate_scales(model),
            config.ema_momentum,
            config.ema_every,
        )
    else:
        schedule = warmup_cosine(config.peak_learning_rate, warmup, train_steps)
        optimizer = adamw(schedule, config.weight_decay, config.ema_momentum, config.ema_every)
    model.compile(
        optimizer=optimizer,
        loss=keras.losses.CategoricalCrossentropy(
            from_logits=True, label_smoothing=config.label_smoothing
        ),
        metrics=[
            keras.metrics.CategoricalAccuracy(name="accuracy"),
            keras.metrics.TopKCategoricalAccuracy(k=3, name="top3_accuracy"),
        ],
    )
    return model
