#!/usr/bin/python3
"""Writes the image files the image and image_folder tests read, with PIL (whose JPEG
codec is libjpeg-turbo, as ringtrain's), and what PIL decodes them to.

Usage: make_test_images.py SPEC.json, SPEC a list of objects:
  path      where to write the image
  format    "PNG" | "JPEG" | "BMP" | "GIF"
  mode      PIL mode of the written pixels: "L", "LA", "RGB", "RGBA", "P", "I;16"
  h, w      size
  fill      "gradient" (value (7y + 13x + 50c) mod 256), a list of channel values (a
            constant image), {"columns": [v0, v1, ...]} (every channel of column x is
            v[x mod len]: masks with known classes), or "mnist" with "index": digit
            `index` of t10k-images-idx3-ubyte.gz in "mnist_dir"
  quality   JPEG quality (default 90)
  expect    optional: where to write PIL's decode of the written file as raw bytes,
            converted to "expect_mode" (default the file's mode), after
            img.draft(expect_mode, (w, h)) when "draft" [w, h] is given (libjpeg's DCT
            scaling); the decoded size goes to expect + ".size" as "h w c".
"""
import gzip
import json
import sys

import numpy as np
from PIL import Image


def pixels(e):
    h, w, mode = e["h"], e["w"], e["mode"]
    channels = {"L": 1, "LA": 2, "RGB": 3, "RGBA": 4, "P": 1, "I;16": 1}[mode]
    fill = e["fill"]
    if fill == "gradient":
        y, x, c = np.meshgrid(np.arange(h), np.arange(w), np.arange(channels), indexing="ij")
        a = (7 * y + 13 * x + 50 * c) % 256
        if mode == "I;16":
            a = a * 257 + (x % 3)  # the low byte differs from the high one
        return a.astype(np.uint16 if mode == "I;16" else np.uint8)
    if fill == "mnist":
        with gzip.open(e["mnist_dir"] + "/t10k-images-idx3-ubyte.gz", "rb") as f:
            f.seek(16 + 784 * e["index"])
            return np.frombuffer(f.read(784), np.uint8).reshape(28, 28, 1)
    if isinstance(fill, dict):
        cols = np.array(fill["columns"], np.uint8)[np.arange(w) % len(fill["columns"])]
        return np.repeat(np.tile(cols[None, :, None], (h, 1, 1)), channels, axis=2)
    return np.tile(np.array(fill, np.uint8), (h, w, 1))


def main():
    spec = json.load(open(sys.argv[1]))
    for e in spec:
        a = pixels(e)
        mode = e["mode"]
        if mode == "I;16":
            img = Image.fromarray(a[:, :, 0], "I;16")
        elif mode == "P":
            img = Image.fromarray(a[:, :, 0], "L").convert("P")  # a palette of the gray levels
        elif mode == "L":
            img = Image.fromarray(a[:, :, 0], "L")
        else:
            img = Image.fromarray(a, mode)
        kw = {"quality": e.get("quality", 90)} if e["format"] == "JPEG" else {}
        img.save(e["path"], e["format"], **kw)
        if "expect" in e:
            back = Image.open(e["path"])
            want = e.get("expect_mode", back.mode)
            if "draft" in e:
                back.draft(want, tuple(e["draft"]))
            back = back.convert(want) if back.mode != want else back
            arr = np.asarray(back)
            arr = arr.reshape(arr.shape[0], arr.shape[1], -1)
            open(e["expect"], "wb").write(arr.astype(np.uint8).tobytes())
            open(e["expect"] + ".size", "w").write("%d %d %d" % arr.shape)


if __name__ == "__main__":
    main()
