"""Benchmark: CIFAR-10 training recipes for the ViT family, under any Keras backend.

    KERAS_BACKEND=jax python -m benchmarks.cifar10_recipes --data cifar10_train_jpeg.tar.gz \\
        --epochs 55 --recipe cct --recipe mix:mixup_alpha=0.8,cutmix_alpha=1.0

The CPU budget of the pipeline (`cifar10_pipeline.py`: at most 90 minutes of training) allows
one run of one recipe; on a GPU (JAX) this trains several at the pipeline's step count in
minutes, to choose which one the CPU run is spent on. A recipe is `NAME[:FIELD=VALUE,...]`:
preset `cct` with VitConfig fields replaced (`epochs=E` replaces --epochs for that recipe,
`preset=P` starts from another preset, `precision=float32` replaces the bfloat16 policy, as
on a CPU without bfloat16 units).

Data: the tarball's `train/<class>/*.jpg`, split as ImageExampleGen splits it (seeded hash of
the image's id, seed 42, 10% validation). The recipe is chosen on a *selection* split carved
out of the pipeline's training split by another seeded hash (seed 7, 10%), so that the
pipeline's validation accuracy is not what picks it; both are printed. Pixels are normalized
by the training split's channel statistics (as Transform does); the random crop and flip are
numpy's (training.py's `augment` does the same in TensorFlow); mixup and CutMix are the
trainer's own `trainer_module/vit/augment.py`; the model and its compile are the trainer's
(`trainer_module/vit/model.py: build_model`), under `mixed_bfloat16` unless told otherwise. The
schedule has the pipeline's step count: epochs x 45,000 / batch size.

Writes one JSON line per recipe to stdout and `--output`.
"""

import io
import os
import tarfile
import time

import numpy as np

from benchmarks import recipes
from benchmarks.recipes import bucket, member_bytes

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

PIPELINE_TRAIN_IMAGES = 45_000  # what the pipeline's training split holds, about
CLASSES = ("airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck")


def load(tarball: str, cache: str):
    """{split: (uint8 images (N, 32, 32, 3), labels (N,))} for train, selection and val."""
    if os.path.exists(cache):
        with np.load(cache) as arrays:
            return {
                split: (arrays[f"{split}_x"], arrays[f"{split}_y"])
                for split in ("train", "selection", "val")
            }
    from PIL import Image

    parts: dict[str, tuple[list, list]] = {
        "train": ([], []),
        "selection": ([], []),
        "val": ([], []),
    }
    with tarfile.open(tarball) as archive:
        for member in archive:
            if not member.isfile() or not member.name.lower().endswith((".jpg", ".jpeg", ".png")):
                continue
            name = member.name.lstrip("./")
            label = CLASSES.index(name.split("/")[-2])
            image = np.asarray(Image.open(io.BytesIO(member_bytes(archive, member))).convert("RGB"))
            split = (
                "val"
                if bucket(name, 42) >= 90
                else "selection"
                if bucket(name, 7) < 10
                else "train"
            )
            parts[split][0].append(image)
            parts[split][1].append(label)
    data = {split: (np.stack(x), np.asarray(y, np.int32)) for split, (x, y) in parts.items()}
    np.savez(
        cache,
        **{f"{split}_{k}": v for split, (x, y) in data.items() for k, v in (("x", x), ("y", y))},
    )
    return data


def batches(images, labels, config, rng):
    """Endless augmented training batches: (pixels (B, S, S, 3), soft labels (B, 10))."""
    from trainer_module.vit.augment import mix_batch

    size, pad, count = images.shape[1], config.crop_padding, config.batch_size
    padded = np.pad(images, ((0, 0), (pad, pad), (pad, pad), (0, 0)))  # 0 = the channel mean
    grid = np.arange(size)
    while True:
        order = rng.permutation(len(images))
        for start in range(0, len(order) - count + 1, count):
            index = order[start : start + count]
            rows = rng.integers(0, 2 * pad + 1, count)[:, None] + grid
            columns = rng.integers(0, 2 * pad + 1, count)[:, None] + grid
            batch = padded[index[:, None, None], rows[:, :, None], columns[:, None, :]]
            if config.horizontal_flip:
                flip = rng.random(count) < 0.5
                batch[flip] = batch[flip, :, ::-1]
            onehot = np.eye(len(CLASSES), dtype="float32")[labels[index]]
            if config.mixup_alpha or config.cutmix_alpha:
                cutmix = (
                    rng.random() < 0.5
                    if config.mixup_alpha and config.cutmix_alpha
                    else config.cutmix_alpha > 0
                )
                alpha = (config.cutmix_alpha if cutmix else config.mixup_alpha) or 1.0
                batch, onehot = (
                    np.asarray(t)
                    for t in mix_batch(batch, onehot, rng.beta(alpha, alpha), cutmix, rng.random(2))
                )
            yield batch, onehot


def run(name: str, overrides: dict, data: dict, epochs: float, seed: int) -> dict:
    import keras

    from trainer_module.vit.config import PRESETS
    from trainer_module.vit.model import WHITENING_IMAGES, build_model

    epochs = float(overrides.pop("epochs", epochs))
    preset, precision = overrides.pop("preset", "cct"), overrides.pop("precision", "mixed_bfloat16")
    config = PRESETS[preset].replace(**overrides)
    keras.mixed_precision.set_global_policy(precision)
    keras.utils.set_random_seed(seed)
    mean = data["train"][0].reshape(-1, 3).mean(0) / 255.0
    std = data["train"][0].reshape(-1, 3).std(0) / 255.0
    normalized = {
        split: (((x / 255.0 - mean) / std).astype("float32"), y) for split, (x, y) in data.items()
    }
    steps = round(epochs * PIPELINE_TRAIN_IMAGES / config.batch_size)
    model = build_model(config, steps)
    if config.whitening_kernel:  # as the Trainer does: from unaugmented training images
        model.whiten(normalized["train"][0][:WHITENING_IMAGES])
    selection_x, selection_y = normalized["selection"]
    started = time.perf_counter()
    history = model.fit(
        batches(*normalized["train"], config, np.random.default_rng(seed)),
        steps_per_epoch=steps // config.evaluations,
        epochs=config.evaluations,
        validation_data=(selection_x, np.eye(len(CLASSES), dtype="float32")[selection_y]),
        verbose=0,
    )
    seconds = time.perf_counter() - started

    def accuracy(split, config=config):
        model.config, model.predict_function = config, None  # the test-time views to average
        x, y = normalized[split]
        return round(
            float((model.predict(x, batch_size=1000, verbose=0).argmax(-1) == y).mean()), 4
        )

    views = {  # test-time augmentation, from the same weights: (flip, translate)
        "none": (False, False),
        "flip": (True, False),
        "flip+translate": (True, True),
    }
    by_views = {
        name: accuracy("val", config.replace(flip_test_time=flip, translate_test_time=shift))
        for name, (flip, shift) in views.items()
    }
    recipe_views = (config.flip_test_time, config.translate_test_time)

    return {
        "recipe": name,
        "preset": preset,
        "precision": precision,
        "overrides": overrides,
        "epochs": epochs,
        "steps": steps,
        "parameters": model.count_params(),
        "selection_accuracy": accuracy("selection"),
        "val_accuracy": next(a for n, a in by_views.items() if views[n] == recipe_views),
        "train_accuracy_by_quarter": [round(a, 4) for a in history.history["accuracy"]],
        "selection_accuracy_by_quarter": [round(a, 4) for a in history.history["val_accuracy"]],
        "val_accuracy_by_test_time_views": by_views,
        "training_images": steps * config.batch_size,
        "fit_seconds": round(seconds, 1),
        "images_per_second": round(steps * config.batch_size / seconds),
        "backend": keras.backend.backend(),
        "seed": seed,
    }


def training_gflop_per_image(preset: str, overrides: dict, precision: str) -> float:
    """One training image's arithmetic (forward, gradients, update) in GFLOP for a recipe,
    counted on TensorFlow's graph of a step of 32 (lab/flops.py)."""
    import keras

    from lab.flops import training_flops
    from trainer_module.vit.config import PRESETS
    from trainer_module.vit.model import build_model

    if keras.backend.backend() != "tensorflow":
        raise RuntimeError("the FLOP count reads TensorFlow's graph: KERAS_BACKEND=tensorflow")
    config = PRESETS[preset].replace(**{**overrides, "batch_size": 32})
    keras.mixed_precision.set_global_policy(precision)
    images = np.random.default_rng(0).normal(size=(32, config.image_size, config.image_size, 3))
    labels = np.eye(len(CLASSES), dtype="float32")[np.arange(32) % len(CLASSES)]
    flops = training_flops(build_model(config, 10), images.astype("float32"), labels)
    return flops / 32 / 1e9


def training_pflop(result: dict) -> float:
    """The recipe's training arithmetic: its images x one image's count."""
    per_image = training_gflop_per_image(result["preset"], result["overrides"], result["precision"])
    return round(result["training_images"] * per_image / 1e6, 3)


COLUMNS = (
    ("training PFLOP", training_pflop),
    (
        "val accuracy: no / flip / flip + shift test-time views",
        lambda r: " / ".join(str(v) for v in r["val_accuracy_by_test_time_views"].values()),
    ),
)


def main(argv=None) -> None:
    recipes.main(
        __doc__,
        data=os.path.join(REPO, "..", "shared", "data", "cifar10", "cifar10_train_jpeg.tar.gz"),
        cache="/tmp/cifar10_recipes.npz",
        epochs=55,
        recipe="cct",
        load=load,
        run=run,
        columns=COLUMNS,
        argv=argv,
    )


if __name__ == "__main__":
    main()
