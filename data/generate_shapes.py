"""Writes the embedded image set in the image-folder layout (data/shapes/<split>/<class>/*.png).

Ten classes of 32x32 pictures drawn here from NumPy primitives (no image copied from any
dataset): a shape or pattern in a random colour on a random background, at a random size and
position, with pixel noise, so a model has to learn the shape rather than a colour. Fixed seed:

    python data/generate_shapes.py            # rewrite data/shapes/
    python data/generate_shapes.py --check    # exit 1 if data/shapes/ differs (pixel-wise)
"""

import argparse
import pathlib
import shutil
import sys

import numpy as np
from PIL import Image

SEED = 20261121
SIZE = 32
COUNTS = {"train": 60, "eval": 16}  # images per class and split
OUT_DIR = pathlib.Path(__file__).resolve().parent / "shapes"


def _grid():
    rows, cols = np.mgrid[0:SIZE, 0:SIZE].astype(np.float32)
    return rows, cols


def _disc(rng, r, c):
    cy, cx, radius = rng.uniform(11, 21), rng.uniform(11, 21), rng.uniform(6, 10)
    return (r - cy) ** 2 + (c - cx) ** 2 <= radius**2


def _ring(rng, r, c):
    cy, cx, radius = rng.uniform(11, 21), rng.uniform(11, 21), rng.uniform(7, 10)
    d = np.sqrt((r - cy) ** 2 + (c - cx) ** 2)
    return (d <= radius) & (d >= radius - rng.uniform(2, 3.5))


def _square(rng, r, c):
    half, cy, cx = rng.uniform(5, 9), rng.uniform(11, 21), rng.uniform(11, 21)
    return (np.abs(r - cy) <= half) & (np.abs(c - cx) <= half)


def _triangle(rng, r, c):
    top, height, cx = rng.uniform(4, 10), rng.uniform(14, 20), rng.uniform(12, 20)
    inside = (r >= top) & (r <= top + height)
    return inside & (np.abs(c - cx) <= (r - top) * 0.6)


def _cross(rng, r, c):
    cy, cx, arm, width = rng.uniform(12, 20), rng.uniform(12, 20), rng.uniform(7, 11), 2.0
    vertical = (np.abs(c - cx) <= width) & (np.abs(r - cy) <= arm)
    horizontal = (np.abs(r - cy) <= width) & (np.abs(c - cx) <= arm)
    return vertical | horizontal


def _stripes(axis):
    def draw(rng, r, c):
        period, phase = rng.uniform(5, 8), rng.uniform(0, 8)
        coordinate = {"horizontal": r, "vertical": c, "diagonal": r + c}[axis]
        return ((coordinate + phase) % period) < period / 2

    return draw


def _checkerboard(rng, r, c):
    cell = rng.integers(4, 8)
    return ((r // cell + c // cell) % 2) == 0


def _dots(rng, r, c):
    mask = np.zeros_like(r, dtype=bool)
    for _ in range(rng.integers(4, 8)):
        cy, cx = rng.uniform(3, 29, size=2)
        mask |= (r - cy) ** 2 + (c - cx) ** 2 <= 4.0
    return mask


CLASSES = {
    "circle": _disc,
    "ring": _ring,
    "square": _square,
    "triangle": _triangle,
    "cross": _cross,
    "horizontal_stripes": _stripes("horizontal"),
    "vertical_stripes": _stripes("vertical"),
    "diagonal_stripes": _stripes("diagonal"),
    "checkerboard": _checkerboard,
    "dots": _dots,
}


def draw(rng: np.random.Generator, shape) -> np.ndarray:
    """One (32, 32, 3) uint8 picture of `shape`, foreground and background far apart."""
    rows, cols = _grid()
    background = rng.uniform(0, 255, size=3)
    foreground = (background + rng.uniform(90, 165, size=3)) % 255
    mask = shape(rng, rows, cols)[..., None]
    image = np.where(mask, foreground, background) + rng.normal(0, 4, size=(SIZE, SIZE, 3))
    return np.clip(image, 0, 255).astype(np.uint8)


def generate() -> dict:
    """Relative path -> pixels, for every image of every split."""
    rng = np.random.default_rng(SEED)
    images = {}
    for split, count in COUNTS.items():
        for name, shape in CLASSES.items():
            for index in range(count):
                images[f"{split}/{name}/{index:03d}.png"] = draw(rng, shape)
    return images


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="compare instead of writing")
    args = parser.parse_args()
    images = generate()
    if args.check:
        on_disk = sorted(str(p.relative_to(OUT_DIR)) for p in OUT_DIR.rglob("*.png"))
        differ = sorted(set(on_disk) ^ set(images)) or [
            path
            for path, pixels in images.items()
            if not np.array_equal(np.asarray(Image.open(OUT_DIR / path)), pixels)
        ]
        if differ:
            print(f"{OUT_DIR} differs from the generator, e.g. {differ[:3]}", file=sys.stderr)
            return 1
        print(f"{OUT_DIR}: {len(images)} images match")
        return 0
    shutil.rmtree(OUT_DIR, ignore_errors=True)
    for path, pixels in images.items():
        (OUT_DIR / path).parent.mkdir(parents=True, exist_ok=True)
        Image.fromarray(pixels).save(OUT_DIR / path, format="PNG", optimize=True)
    print(f"wrote {len(images)} images to {OUT_DIR}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
