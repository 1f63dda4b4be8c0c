#!/usr/bin/python3
"""Writes a small synthetic segmentation set made of real MNIST digits, for deploy/jobs/unet_segmentation.json
and deploy/jobs/unet_bench.json (image_folder with "masks"):
     OUT/train/images/<index>.png  OUT/train/masks/<index>.png   examples 0..1999
     OUT/eval/images/<index>.png   OUT/eval/masks/<index>.png    examples 8000..8499
   (index zero-padded to 5 digits; an image and its mask share the file name).

Example i is a black 128x128 grayscale canvas with 2 or 3 MNIST test digits pasted on it: digit i and the
next one or two (i+1, i+2), each resized (bilinear) to a square of 28..56 pixels and pasted at a random
position, overlaps combined by the maximum. Its mask is a single-channel PNG whose value is the class of each
pixel: digit + 1 where the pasted digit's ink is above 127, else 0 (background): 11 classes; where digits
overlap, the one pasted last wins. The count, sizes and positions come from numpy's default_rng seeded with
(SEED, i), so every example is the same on every run whatever else is written.

Usage: deploy/make_segmentation_folder.py [OUT] [MNIST_DIR]
  OUT        default data/mnist_seg in this checkout
  MNIST_DIR  the IDX files (t10k-*-ubyte.gz); default data/mnist, else ../shared/data/mnist
             beside the checkout (deploy/get_mnist.sh puts them in data/mnist).
Built in OUT.part and renamed onto OUT when complete; an existing complete OUT is kept.
Needs PIL and numpy (Debian python3-pil, python3-numpy)."""
import os
import shutil
import sys

import numpy as np
from PIL import Image

import mnist_idx  # deploy/mnist_idx.py, beside this script

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SIZE = 128
SEED = 20240
SPLITS = (("train", range(0, 2000)), ("eval", range(8000, 8500)))


def example(i, images, labels):
    """Returns (image, mask), both uint8 SIZE x SIZE, of example i."""
    rng = np.random.default_rng([SEED, i])
    canvas = np.zeros((SIZE, SIZE), np.uint8)
    mask = np.zeros((SIZE, SIZE), np.uint8)
    for k in range(2 + int(rng.integers(2))):
        j = (i + k) % len(labels)
        side = int(rng.integers(28, 57))
        top, left = (int(v) for v in rng.integers(0, SIZE - side + 1, size=2))
        digit = Image.frombytes("L", (28, 28), images[784 * j:784 * (j + 1)])
        if side != 28:
            digit = digit.resize((side, side), Image.BILINEAR)
        ink = np.asarray(digit, np.uint8)
        region = (slice(top, top + side), slice(left, left + side))
        np.maximum(canvas[region], ink, out=canvas[region])
        mask[region][ink > 127] = labels[j] + 1
    return canvas, mask


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "data/mnist_seg")
    if os.path.exists(os.path.join(out, "eval", "masks")):
        print("make_segmentation_folder: %s is already there" % out)
        return
    src = mnist_idx.find(sys.argv[2] if len(sys.argv) > 2 else None, "make_segmentation_folder")
    images, labels = mnist_idx.read(src, "make_segmentation_folder")
    part = out + ".part"
    shutil.rmtree(part, ignore_errors=True)
    written = []
    for split, indices in SPLITS:
        image_dir, mask_dir = os.path.join(part, split, "images"), os.path.join(part, split, "masks")
        os.makedirs(image_dir)
        os.makedirs(mask_dir)
        for i in indices:
            image, mask = example(i, images, labels)
            Image.fromarray(image, "L").save(os.path.join(image_dir, "%05d.png" % i))
            Image.fromarray(mask, "L").save(os.path.join(mask_dir, "%05d.png" % i))
        written.append("%s: %d images and masks (examples %d..%d)" % (split, len(indices), indices[0], indices[-1]))
    shutil.rmtree(out, ignore_errors=True)
    os.rename(part, out)
    print("make_segmentation_folder: wrote %s to %s (%dx%d grayscale; mask values 0 background, 1 + digit)"
          % ("; ".join(written), out, SIZE, SIZE))


if __name__ == "__main__":
    main()
