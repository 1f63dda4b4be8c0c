#!/usr/bin/env bash
# Puts the MNIST test set (10,000 images, IDX, gzip) where deploy/jobs/mnist_w*.json read it:
#   deploy/get_mnist.sh [DIR]        (default: data/mnist in this checkout)
# From ../shared/data/mnist beside the checkout when it is there (this project's machines),
# else downloaded with curl from TensorFlow's MNIST mirror. Either way the decompressed
# contents are checked against the published files' SHA-256 before anything is kept.
# Exit 0 when the files are in place; 1 when they could not be fetched or do not verify.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-$root/data/mnist}
shared=$root/../shared/data/mnist
mirror=${MNIST_MIRROR:-https://storage.googleapis.com/cvdf-datasets/mnist}
declare -A sha=(
  [t10k-images-idx3-ubyte.gz]=0fa7898d509279e482958e8ce81c8e77db3f2f8254e26661ceb7762c4d494ce7
  [t10k-labels-idx1-ubyte.gz]=ff7bcfd416de33731a308c3f266cc351222c34898ecbeaf847f06e48f7ec33f2
)

verified() {  # verified FILE NAME: FILE's decompressed SHA-256 is the published one of NAME
  [ -f "$1" ] && [ "$(gzip -dc "$1" 2>/dev/null | sha256sum | cut -d' ' -f1)" = "${sha[$2]}" ]
}

mkdir -p "$dir"
for f in "${!sha[@]}"; do
  target=$dir/$f
  if verified "$target" "$f"; then continue; fi
  tmp=$target.part
  if [ -f "$shared/$f" ]; then
    cp "$shared/$f" "$tmp"
  else
    echo "get_mnist: downloading $mirror/$f"
    if ! curl -fsSL --max-time 300 --retry 2 -o "$tmp" "$mirror/$f"; then
      rm -f "$tmp"
      echo "get_mnist: could not download $mirror/$f; put the MNIST test set files in $dir by hand (or set MNIST_MIRROR)" >&2
      exit 1
    fi
  fi
  if ! verified "$tmp" "$f"; then
    rm -f "$tmp"
    echo "get_mnist: $f does not match the published MNIST file (SHA-256 of its contents); nothing was kept" >&2
    exit 1
  fi
  mv "$tmp" "$target"
done
echo "get_mnist: the MNIST test set is in $dir"
