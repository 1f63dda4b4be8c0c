#!/usr/bin/python3
"""Writes the MNIST test set as an .npz with Keras' array names, for deploy/jobs/npz.json and
deploy/jobs/multi_io.json.

    /usr/bin/python3 deploy/make_mnist_npz.py [DIR]     (default: data/mnist in this checkout)

Reads DIR/t10k-{images-idx3,labels-idx1}-ubyte.gz (deploy/get_mnist.sh puts them there) and
writes DIR/mnist.npz (np.savez_compressed, like Keras' own mnist.npz) holding uint8 arrays
in IDX order: x_train (8000, 28, 28) and y_train (8000,) are examples 0..7999, x_test and
y_test examples 8000..9999 -- the split deploy/jobs/mnist_w2.json selects with first/count,
so the npz job trains to exactly the same model bytes.

For the two-input, two-output job (multi_io.json) the same examples also get:
  quadrants_train / quadrants_test  float32 (N, 4): each image's mean ink (0..1) in its
                                    top-left, top-right, bottom-left and bottom-right 14x14
  large_train / large_test          uint8 (N,): 1 where the digit is 5 or more, else 0
"""
import gzip
import os
import sys

import numpy as np

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
d = sys.argv[1] if len(sys.argv) > 1 else os.path.join(root, "data", "mnist")
with gzip.open(os.path.join(d, "t10k-images-idx3-ubyte.gz")) as f:
    x = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 28, 28)
with gzip.open(os.path.join(d, "t10k-labels-idx1-ubyte.gz")) as f:
    y = np.frombuffer(f.read(), np.uint8, offset=8)
out = os.path.join(d, "mnist.npz")
q = x.reshape(-1, 2, 14, 2, 14).astype(np.float32).mean(axis=(2, 4)).reshape(-1, 4) / np.float32(255)
large = (y >= 5).astype(np.uint8)
np.savez_compressed(out, x_train=x[:8000], y_train=y[:8000], x_test=x[8000:], y_test=y[8000:],
                    quadrants_train=q[:8000].astype(np.float32), quadrants_test=q[8000:].astype(np.float32),
                    large_train=large[:8000], large_test=large[8000:])
print(out)
