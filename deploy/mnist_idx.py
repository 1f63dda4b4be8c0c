"""The MNIST test set's IDX files for deploy/'s converters: where they are, and their bytes."""
import gzip
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def find(argv_dir, tool):
    """The folder with t10k-*-ubyte.gz: argv_dir when given, else data/mnist in this checkout, else
    ../shared/data/mnist beside it; exits naming `tool` when there is none."""
    if argv_dir:
        return argv_dir
    src = next((d for d in (os.path.join(ROOT, "data/mnist"), os.path.join(ROOT, "../shared/data/mnist"))
                if os.path.exists(os.path.join(d, "t10k-images-idx3-ubyte.gz"))), None)
    if src is None:
        sys.exit("%s: no MNIST IDX files; run deploy/get_mnist.sh first" % tool)
    return src


def read(src, tool):
    """(images, labels): the 10,000 images' 784 bytes each, concatenated, and their 10,000 label bytes."""
    with gzip.open(os.path.join(src, "t10k-images-idx3-ubyte.gz"), "rb") as f:
        images = f.read()[16:]
    with gzip.open(os.path.join(src, "t10k-labels-idx1-ubyte.gz"), "rb") as f:
        labels = f.read()[8:]
    if len(images) != 10000 * 784 or len(labels) != 10000:
        sys.exit("%s: %s does not hold the 10,000 MNIST test examples" % (tool, src))
    return images, labels
