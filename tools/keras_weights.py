#!/usr/bin/env python3
"""ringtrain's safetensors weights <-> Keras, with NumPy only.

ringtrain names every weight "<layer name>/<weight name>" with Keras' shapes (Dense
kernel [in, units], Conv2D kernel [kh, kw, in, filters], BatchNormalization gamma, beta,
moving_mean, moving_variance, ...), so a Keras model built from the same model JSON
takes them layer by layer.

Back to Keras (the weights ringtrain trained):
    import keras_weights
    keras_weights.set_keras_weights(model, "model.safetensors")   # layer.set_weights per layer
or, without importing Keras here:
    python3 tools/keras_weights.py to-npz model.safetensors weights.npz
    # weights.npz: "<layer>/<weight>" arrays, and "__layers__": the names of the layers with weights
    w = keras_weights.weights_for_layers(tensors, [l.name for l in model.layers])
    model.set_weights(w)   # Keras 3 order: each layer's weights in turn

From Keras (pretrained weights for a job's "initial_weights"):
    keras_weights.save_keras_weights(model, "pretrained.safetensors")
or from an .npz of "<layer>/<weight>" arrays:
    python3 tools/keras_weights.py from-npz weights.npz pretrained.safetensors

Within a layer, weights go in Keras' creation order (kernel, depthwise_kernel,
pointwise_kernel, bias, gamma, beta, moving_mean, moving_variance), which is the order
layer.get_weights() returns and layer.set_weights() takes.
"""
import json
import struct
import sys

import numpy as np

# Keras' creation order of a layer's weights.
_ORDER = ["kernel", "depthwise_kernel", "pointwise_kernel", "bias", "gamma", "beta", "moving_mean",
          "moving_variance"]

_DTYPES = {"F32": np.float32, "F64": np.float64, "F16": np.float16, "I64": np.int64, "I32": np.int32,
           "U8": np.uint8}


def read_safetensors(path):
    """{name: numpy array} of a safetensors file (the format's reference layout)."""
    with open(path, "rb") as f:
        raw = f.read()
    if len(raw) < 8:
        raise ValueError(f"{path}: not a safetensors file (shorter than 8 bytes)")
    (n,) = struct.unpack("<Q", raw[:8])
    if n > len(raw) - 8:
        raise ValueError(f"{path}: header length {n} runs past the end of the file")
    header = json.loads(raw[8:8 + n].decode("utf-8"))
    data = raw[8 + n:]
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        dtype = _DTYPES.get(info["dtype"])
        if dtype is None:
            raise ValueError(f"{path}: tensor '{name}' has dtype {info['dtype']}, not one this script reads")
        begin, end = info["data_offsets"]
        arr = np.frombuffer(data[begin:end], dtype=np.dtype(dtype).newbyteorder("<"))
        out[name] = arr.reshape(info["shape"]).astype(np.float32)
    return out


def write_safetensors(path, tensors):
    """Writes {name: array} as float32 safetensors (names sorted, header padded to 8 bytes)."""
    header, chunks, offset = {}, [], 0
    for name in sorted(tensors):
        arr = np.ascontiguousarray(np.asarray(tensors[name], dtype="<f4"))
        b = arr.tobytes()
        header[name] = {"dtype": "F32", "shape": list(arr.shape), "data_offsets": [offset, offset + len(b)]}
        chunks.append(b)
        offset += len(b)
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in chunks:
            f.write(b)


def _rank(weight):
    return _ORDER.index(weight) if weight in _ORDER else len(_ORDER)


def by_layer(tensors):
    """{layer name: [arrays in Keras' order]}."""
    groups = {}
    for name in tensors:
        layer, _, weight = name.rpartition("/")
        groups.setdefault(layer, []).append((_rank(weight), weight, name))
    return {layer: [tensors[n] for _, _, n in sorted(items)] for layer, items in groups.items()}


def weights_for_layers(tensors, layer_names):
    """The flat list model.set_weights() takes for a model whose layers are `layer_names`
    in order (layers without weights contribute nothing)."""
    groups = by_layer(tensors)
    unknown = set(groups) - set(layer_names)
    if unknown:
        raise ValueError(f"the file has weights of layers the model lacks: {sorted(unknown)}")
    out = []
    for name in layer_names:
        out.extend(groups.get(name, []))
    return out


def set_keras_weights(model, path):
    """Sets every layer of a Keras model from a ringtrain safetensors file."""
    groups = by_layer(read_safetensors(path))
    for layer in model.layers:
        if layer.name in groups:
            layer.set_weights(groups.pop(layer.name))
    if groups:
        raise ValueError(f"{path} has weights of layers the model lacks: {sorted(groups)}")


def save_keras_weights(model, path):
    """Writes a Keras model's weights as "<layer>/<weight>" safetensors (for initial_weights)."""
    tensors = {}
    for layer in model.layers:
        for w in layer.weights:
            # tf.keras 2 names "block1_conv1/kernel:0", Keras 3 "kernel".
            short = w.name.split("/")[-1].split(":")[0]
            tensors[f"{layer.name}/{short}"] = np.asarray(w.numpy() if hasattr(w, "numpy") else w)
    write_safetensors(path, tensors)


def main(argv):
    if len(argv) != 4 or argv[1] not in ("to-npz", "from-npz"):
        sys.stderr.write("usage: keras_weights.py to-npz MODEL.safetensors OUT.npz\n"
                         "       keras_weights.py from-npz WEIGHTS.npz OUT.safetensors\n")
        return 2
    try:
        if argv[1] == "to-npz":
            tensors = read_safetensors(argv[2])
            layers = sorted({n.rpartition("/")[0] for n in tensors})
            np.savez(argv[3], __layers__=np.array(layers), **tensors)
        else:
            with np.load(argv[2]) as z:
                write_safetensors(argv[3], {k: z[k] for k in z.files if k != "__layers__"})
    except (OSError, ValueError, KeyError) as e:
        sys.stderr.write(f"keras_weights.py: {e}\n")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
