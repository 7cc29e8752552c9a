"""The from-scratch Vision Transformer's typed config, its presets and its Tuner search space
(pure data: no TensorFlow, no Keras)."""

import dataclasses
from typing import Any, Mapping

from trainer_module.family import PresetConfig, RuntimesConfig, default_search_space


@dataclasses.dataclass(frozen=True)
class VitConfig(RuntimesConfig, PresetConfig):
    """Every knob of the ViT image classifier and its training, with why it has its value."""

    image_size: int = 32  # images are resized to this square inside Transform and serving
    num_classes: int = 10  # CIFAR-10's; the Trainer sets the number of classes in the data
    # Tokenizer: "patch" (ViT: one strided convolution, patch_size x patch_size patches),
    # "conv" (Compact Convolutional Transformer: conv_layers 3x3 conv + ReLU + 3x3/2 max-pool,
    # each halving the grid; overlapping receptive fields help on small data) or "hybrid" (the
    # ViT paper's hybrid: tokens from a CNN's feature map; conv_layers stages of two 3x3
    # conv + BatchNorm + GELU, the second with stride 2, channels doubling from conv_filters
    # to d_model).
    tokenizer: str = "patch"  # the ViT paper's; the presets for small data use "conv"
    patch_size: int = 4  # 32x32 -> 8x8 = 64 patches
    conv_layers: int = 2  # two halvings: 32x32 -> 8x8 tokens (CCT-x/3x2)
    conv_filters: int = 64  # of the convolutions before the last (which has d_model filters)
    # Hybrid only: stem_pooling makes each stage airbench's block (Jordan, 2024): 3x3 conv,
    # 2x2 max-pool, BatchNorm, GELU, 3x3 conv, BatchNorm, GELU (pooling, not a strided conv,
    # halves the grid, flooring: 32 -> 16 -> 8 -> 4, or 31 -> 15 -> 7 -> 3 after whitening).
    stem_pooling: bool = False
    # Hybrid only: every stage after the first has d_model filters (airbench94's 64/256/256),
    # not conv_filters x 2^i (64/128/256). 1.7 x the stem's arithmetic, and on CIFAR-10 no
    # more accurate per PFLOP (docs/models/vit.md).
    wide_stem: bool = False
    # Patch whitening (airbench), hybrid only: k > 0 makes the stem's first convolution a
    # frozen k x k one whose 2 * 3 * k^2 filters are the +/- eigenvectors of the training
    # images' k x k patch covariance, scaled to unit variance (set by whiten()). With
    # stem_pooling it is airbench's: unpadded, followed by a GELU, before the first stage.
    whitening_kernel: int = 0
    # Encoder: pre-norm blocks with a GELU MLP, then a final LayerNorm (the ViT paper's).
    d_model: int = 128  # ViT-Tiny's 192 scaled down for 32x32 images
    num_heads: int = 4  # 32 dimensions per head
    mlp_dim: int = 256  # 2 x d_model
    num_layers: int = 4  # CCT-4's depth
    dropout: float = 0.1  # on the embeddings, sublayer outputs and inside the MLP
    # Pooling: "cls" (a learned [CLS] token at position 0 feeds the head) or "sequence" (CCT's
    # attention-weighted mean over all tokens).
    pooling: str = "cls"  # the ViT paper's
    # Hybrid only: the stem's BatchNorms. airbench's have a moving-average momentum of 0.6 (in
    # Keras's sense: 0.6 x the old statistics) and no scale (the convolution's scale is free).
    norm_momentum: float = 0.9  # PyTorch's rate (Keras: 0.99): short trainings infer well
    norm_scale: bool = True  # a learned scale per channel (Keras's default)
    # Keras's 1e-3; airbench's 1e-12 keeps the normalised convolution invariant to its weights'
    # scale however far weight decay shrinks them. On CIFAR-10 the two were within noise.
    norm_epsilon: float = 1e-3
    # Optimisation: "adamw" (linear warmup, then cosine decay to zero at the last step) or "sgd"
    # (airbench's: Nesterov SGD, from 0.2 x the peak to the peak over the warmup, then linearly
    # to 0.07 x the peak; weight decay decoupled, Keras's: w -= w x decay x learning rate).
    optimizer: str = "adamw"
    batch_size: int = 128  # per replica, as in the CCT paper's CIFAR runs
    peak_learning_rate: float = 1e-3  # keras.io's CCT example (the paper: 5.5e-4)
    warmup_fraction: float = 0.05  # of the training steps
    weight_decay: float = 0.05  # DeiT's (CCT: 0.06): small data, many epochs
    momentum: float = 0.85  # sgd only: airbench's
    # sgd only: the stem's BatchNorm offsets learn this many times faster (airbench's 64).
    norm_bias_scaler: float = 1.0
    # sgd only: the Transformer blocks, pooling, positions and head learn at this fraction of
    # the stem's rate. A BatchNorm'd convolution is invariant to its weights' scale and takes
    # airbench's large rate; these are not, and diverge at it. Measured on CIFAR-10 with
    # airbench's peak of 1.5 (docs/models/vit.md): better at 10 epochs, worse at the recipe's 25.
    encoder_lr_scale: float = 1.0
    label_smoothing: float = 0.1  # the ViT and CCT recipes
    ema_momentum: float = 0.0  # > 0: validate and export an average of the weights; 0: off
    # With ema_momentum: every ema_every steps the weights are reset to their average
    # (lookahead, as airbench's); 0: the average is only swapped in at the end.
    ema_every: int = 0
    # Augmentation in the trainer's input function (training batches only).
    crop_padding: int = 4  # zero-pad (in normalized units) then crop back to image_size
    horizontal_flip: bool = True  # CIFAR's classes look alike mirrored
    # Batch mixing (augment.py): mixup and CutMix, one of the two per batch when both are on;
    # alpha is Beta(alpha, alpha)'s, for the share of each image kept; 0 turns one off.
    mixup_alpha: float = 0.0  # DeiT's and CCT's: 0.8
    cutmix_alpha: float = 0.0  # DeiT's and CCT's: 1.0
    evaluations: int = 4  # validation passes spread over the training steps
    # Test-time augmentation: at inference (validation, TFMA, serving) the logits are the mean
    # of the image's and its mirror's. Doubles the cost of a prediction.
    flip_test_time: bool = False  # on in the `hybrid_airbench` preset
    # With flip_test_time: also the mean over the image (and its mirror) shifted by one pixel
    # up-left and down-right, reflect-padded, weighted as airbench's (the unshifted views count
    # half): 6 passes per prediction.
    translate_test_time: bool = False

    def __post_init__(self):
        self.check_serving_runtimes()
        if self.tokenizer not in ("patch", "conv", "hybrid"):
            raise ValueError(
                f"tokenizer must be 'patch', 'conv' or 'hybrid', not {self.tokenizer!r}"
            )
        if self.pooling not in ("cls", "sequence"):
            raise ValueError(f"pooling must be 'cls' or 'sequence', not {self.pooling!r}")
        if self.tokenizer == "patch" and self.image_size % self.patch_size:
            raise ValueError(
                f"image_size={self.image_size} is not a multiple of patch_size={self.patch_size}"
            )
        if self.mixup_alpha < 0 or self.cutmix_alpha < 0:
            raise ValueError(
                f"mixup_alpha and cutmix_alpha must be >= 0, not "
                f"{self.mixup_alpha} and {self.cutmix_alpha}"
            )
        if self.stem_pooling and self.tokenizer != "hybrid":
            raise ValueError("stem_pooling needs tokenizer='hybrid'")
        if self.whitening_kernel < 0 or (self.whitening_kernel and self.tokenizer != "hybrid"):
            raise ValueError(
                f"whitening_kernel={self.whitening_kernel} needs tokenizer='hybrid' and k >= 0"
            )
        if self.optimizer not in ("adamw", "sgd"):
            raise ValueError(f"optimizer must be 'adamw' or 'sgd', not {self.optimizer!r}")
        if self.norm_bias_scaler != 1.0 and self.optimizer != "sgd":
            raise ValueError("norm_bias_scaler needs optimizer='sgd'")
        if self.encoder_lr_scale != 1.0 and self.optimizer != "sgd":
            raise ValueError("encoder_lr_scale needs optimizer='sgd'")
        if self.wide_stem and self.tokenizer != "hybrid":
            raise ValueError("wide_stem needs tokenizer='hybrid'")
        if self.translate_test_time and not self.flip_test_time:
            raise ValueError("translate_test_time needs flip_test_time")
        if self.d_model % self.num_heads:
            raise ValueError(
                f"d_model={self.d_model} must be divisible by num_heads={self.num_heads}"
            )

    @property
    def grid_size(self) -> int:
        """Tokens per side of the image after the tokenizer."""
        if self.tokenizer == "patch":
            return self.image_size // self.patch_size
        size = self.image_size
        if self.stem_pooling:
            size -= max(self.whitening_kernel - 1, 0)  # the unpadded whitening convolution
            return size // 2**self.conv_layers  # unpadded 2x2 max-pooling floors
        for _ in range(self.conv_layers):
            size = -(-size // 2)  # "same" max-pooling, or a "same" convolution, with stride 2
        return size

    @property
    def num_patches(self) -> int:
        return self.grid_size**2


# The pooled hybrid's network, which its recipes share (hybrid_airbench below, and the
# recorded `hybrid` of benchmarks/cifar10_pipeline.py): a
# frozen 2x2 whitening convolution, three conv-pool stages of 64, 128 and 256 channels (3x3 = 9
# tokens of 256), two Transformer blocks, airbench's label smoothing, flip test-time views.
POOLED_HYBRID: dict[str, Any] = dict(
    tokenizer="hybrid",
    conv_layers=3,
    conv_filters=64,
    stem_pooling=True,
    whitening_kernel=2,
    d_model=256,
    num_heads=4,
    mlp_dim=512,
    num_layers=2,
    pooling="sequence",
    dropout=0.0,
    label_smoothing=0.2,
    flip_test_time=True,
)

PRESETS: Mapping[str, VitConfig] = {
    # For tests: builds and trains a step in about a second.
    "tiny": VitConfig(
        image_size=16,
        patch_size=4,
        d_model=16,
        num_heads=2,
        mlp_dim=32,
        num_layers=1,
        batch_size=8,
        dropout=0.0,
        evaluations=1,
    ),
    # The default, for the embedded shapes: a small CCT (on those few images a plain ViT of
    # 4x4 patches and a [CLS] token overfits).
    "small": VitConfig(
        tokenizer="conv",
        conv_layers=2,
        conv_filters=32,
        d_model=64,
        num_heads=2,
        mlp_dim=128,
        num_layers=2,
        pooling="sequence",
        batch_size=64,
        dropout=0.0,
    ),
    # CIFAR-10 on a CPU: CCT-4/3x2 (Hassani et al.): two 3x3 convolutions as the tokenizer
    # (8x8 tokens), 4 blocks of 128 with 2 heads and an MLP of 128, sequence pooling; light
    # mixup (chosen by benchmarks/cifar10_recipes.py on a selection split over none, and over
    # deeper or wider blocks at the same CPU time: docs/benchmarks/cifar10.md).
    "cct": VitConfig(
        tokenizer="conv",
        conv_layers=2,
        conv_filters=64,
        d_model=128,
        num_heads=2,
        mlp_dim=128,
        num_layers=4,
        pooling="sequence",
        dropout=0.0,
        mixup_alpha=0.2,
    ),
    # The CIFAR-10 task's recipe: the ViT paper's hybrid with airbench's stem (POOLED_HYBRID)
    # trained with airbench's recipe (benchmarks/cifar10_recipes.py chose it under JAX,
    # docs/benchmarks/cifar10.md; the recipes before it are benchmarks/cifar10_pipeline.py's
    # RECORDED_RECIPES): batches
    # of 1,024; Nesterov SGD (momentum 0.85) from 0.2 x its peak of 0.1 up to the peak over 23%
    # of the steps, then linearly down to 0.07 x; decoupled weight decay 0.05; stem BatchNorms
    # with a moving-average momentum of 0.6 and no scale, their offsets learning 64 x faster;
    # 2-pixel crops and flips, no mixup; flips and 1-pixel shifts averaged at test time.
    # airbench's peak of 1.5 diverges here: the head, pooling and Transformer blocks are not
    # invariant to their weights' scale, as a BatchNorm'd convolution is.
    "hybrid_airbench": VitConfig(
        **POOLED_HYBRID,
        norm_momentum=0.6,
        norm_scale=False,
        optimizer="sgd",
        batch_size=1024,
        peak_learning_rate=0.1,
        warmup_fraction=0.23,
        weight_decay=0.05,
        momentum=0.85,
        norm_bias_scaler=64.0,
        crop_padding=2,
        translate_test_time=True,
    ),
    # The ViT paper's recipe scaled to CIFAR: 4x4 patches, 6 layers of 256, for a GPU (not
    # measured here).
    "base": VitConfig(d_model=256, num_heads=8, mlp_dim=512, num_layers=6),
}


SEARCH_SPACE = default_search_space()  # the Tuner's (--tune)


def transform_config(config: VitConfig) -> dict:
    """What the preprocessing_fn reads from Transform's custom_config."""
    return {"image_size": config.image_size}
