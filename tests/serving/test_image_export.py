import json
import subprocess
import sys

import keras
import numpy as np
import tensorflow as tf

from tests.image_util import encode
from trainer_module.models.vit import VisionTransformer
from trainer_module.models.vit_presets import get_preset
from trainer_module.preprocessing import image, local
from trainer_module.serving.image_classifier import export_image_classifier

FEATURE_SPEC = {"image": tf.io.FixedLenFeature([], tf.string),
                "label": tf.io.FixedLenFeature([], tf.int64),
                "label_name": tf.io.FixedLenFeature([], tf.string)}
COLOURS = {"red": [220, 30, 30], "green": [30, 200, 40], "blue": [30, 40, 220]}


def picture(name: str, size: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    noise = rng.normal(0, 12, size=(size, size, 3))
    return np.clip(np.asarray(COLOURS[name]) + noise, 0, 255).astype(np.uint8)


def example(data: bytes) -> bytes:
    return tf.train.Example(features=tf.train.Features(feature={
        "image": tf.train.Feature(bytes_list=tf.train.BytesList(value=[data]))})
    ).SerializeToString()


def test_exported_classifier_answers_raw_image_bytes_with_plain_tensorflow(tmp_path):
    rows = [{"image": encode(picture(name, 16, seed)), "label": label, "label_name": name}
            for seed in range(6) for label, name in enumerate(COLOURS)]
    transformed, output = local.analyze_and_transform(
        rows, image.preprocessing_fn, {"image_size": 16}, str(tmp_path / "transform"),
        FEATURE_SPEC)
    names = image.class_names(output)
    assert names == list(COLOURS)

    keras.utils.set_random_seed(0)
    model = VisionTransformer(get_preset("tiny", {"num_classes": 3}))
    model.compile(optimizer=keras.optimizers.Adam(3e-3),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    model.fit(np.stack([r["pixels"] for r in transformed]),
              np.array([r["label"] for r in transformed]), epochs=30, batch_size=6, verbose=0)
    export_dir = str(tmp_path / "model")
    export_image_classifier(model, output, export_dir, names)

    # Any size and format: a 50x40 JPEG and a 16x16 PNG.
    images = [encode(picture("green", 50, 99)[:40], "JPEG"), encode(picture("blue", 16, 98))]
    script = ("import json, sys, tensorflow as tf\n"
              "m = tf.saved_model.load(sys.argv[1])\n"
              "images = [open(p, 'rb').read() for p in sys.argv[2:]]\n"
              "out = m.signatures['classify_image'](image=tf.constant(images))\n"
              "print(json.dumps({'names': [n.decode() for n in out['label_name'].numpy()],\n"
              "                  'sums': out['probabilities'].numpy().sum(-1).tolist()}))\n")
    paths = []
    for index, data in enumerate(images):
        paths.append(str(tmp_path / f"{index}.img"))
        open(paths[-1], "wb").write(data)
    fresh = subprocess.run([sys.executable, "-c", script, export_dir, *paths],
                           capture_output=True, text=True, timeout=300)
    assert fresh.returncode == 0, fresh.stderr[-2000:]
    answer = json.loads(fresh.stdout.strip().splitlines()[-1])
    assert answer["names"] == ["green", "blue"]
    np.testing.assert_allclose(answer["sums"], 1.0, atol=1e-5)

    loaded = tf.saved_model.load(export_dir)
    served = loaded.signatures["serving_default"](
        examples=tf.constant([example(images[0]), example(encode(picture("red", 16, 97)))]))
    assert served["label_name"].numpy().tolist() == [b"green", b"red"]
    assert served["probabilities"].shape == (2, 3)
    # Attention over the 16x16 image's 4x4 patches of 4 pixels, [CLS] first (tiny preset).
    attention = loaded.signatures["attention"](image=tf.constant(images))
    assert attention["patch_grid"].numpy().tolist() == [4, 4]
    weights = attention["attention"].numpy()
    layers, heads = model.config.num_layers, model.config.num_heads
    assert weights.shape == (2, layers, heads, 17, 17)
    np.testing.assert_allclose(weights.sum(axis=-1), 1.0, rtol=1e-5)
    features = loaded.signatures["transform_features"](examples=tf.constant([
        tf.train.Example(features=tf.train.Features(feature={
            "image": tf.train.Feature(bytes_list=tf.train.BytesList(value=[images[1]])),
            "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[2])),
            "label_name": tf.train.Feature(bytes_list=tf.train.BytesList(value=[b"blue"])),
        })).SerializeToString()]))
    assert features["pixels"].shape == (1, 16, 16, 3)
    assert features["label"].numpy().tolist() == [2]
