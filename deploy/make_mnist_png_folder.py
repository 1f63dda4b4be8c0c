#!/usr/bin/python3
"""Writes the MNIST test set as PNG class folders, for deploy/jobs/image_folder.json:
     OUT/train/<digit>/<index>.png   examples 0..7999
     OUT/eval/<digit>/<index>.png    examples 8000..9999
   (index zero-padded to 5 digits, so each folder's sorted listing is IDX order).

Usage: deploy/make_mnist_png_folder.py [OUT] [MNIST_DIR]
  OUT        default data/mnist_png in this checkout
  MNIST_DIR  the IDX files (t10k-*-ubyte.gz); default data/mnist, else ../shared/data/mnist
             beside the checkout (deploy/get_mnist.sh puts them in data/mnist).
Built in OUT.part and renamed onto OUT when complete; an existing complete OUT is kept.
Needs PIL (Debian python3-pil)."""
import os
import shutil
import sys

from PIL import Image

import mnist_idx  # deploy/mnist_idx.py, beside this script

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "data/mnist_png")
    if os.path.exists(os.path.join(out, "eval", "9")):
        print("make_mnist_png_folder: %s is already there" % out)
        return
    src = mnist_idx.find(sys.argv[2] if len(sys.argv) > 2 else None, "make_mnist_png_folder")
    images, labels = mnist_idx.read(src, "make_mnist_png_folder")
    part = out + ".part"
    shutil.rmtree(part, ignore_errors=True)
    for i in range(10000):
        split = "train" if i < 8000 else "eval"
        d = os.path.join(part, split, str(labels[i]))
        os.makedirs(d, exist_ok=True)
        Image.frombytes("L", (28, 28), images[784 * i:784 * (i + 1)]).save(os.path.join(d, "%05d.png" % i))
    shutil.rmtree(out, ignore_errors=True)
    os.rename(part, out)
    print("make_mnist_png_folder: wrote 10,000 PNGs to %s" % out)


if __name__ == "__main__":
    main()
