"""Writes (and checks) Keras weight files in the layouts Keras' own saving code uses, for
tests/modelfiles. Keras itself is not needed: h5py and zipfile write what
keras/src/saving/saving_lib.py (Keras 3) and legacy h5 saving (Keras 2) write.

  keras_files.py write KIND SPEC OUT     KIND: keras2_flat, keras2_nested, keras3_legacy_h5,
                                               keras3_archive, keras3_weights_h5
  keras_files.py check_archive SPEC ARCHIVE CONFIG   (an archive ringtrain wrote)

SPEC is JSON: {"weights": [{"name": "c1/kernel", "shape": [...]}, ...]} in ringtrain's
ParamInfo order; tensor k holds (k + 1) * 0.01 + i * 0.001 (float32) at flat index i.

The model ("the test model"): input [6, 6, 2] -> Conv2D c1 -> DepthwiseConv2D dw ->
Sequential block [Conv2D c2, BatchNormalization bn] -> Conv2D c3 (no bias) ->
SeparableConv2D sep -> LayerNormalization ln -> Flatten flat -> Dense head.
"""
import io
import json
import sys
import zipfile

import h5py
import numpy as np

# Keras' variables of each layer in Keras' order, as ringtrain names them, and the
# Keras 3 variable names (Keras 3 calls DepthwiseConv2D's kernel "kernel").
LAYERS = [
    ("c1", "Conv2D", ["kernel", "bias"], ["kernel", "bias"]),
    ("dw", "DepthwiseConv2D", ["depthwise_kernel", "bias"], ["kernel", "bias"]),
    ("c2", "Conv2D", ["kernel", "bias"], ["kernel", "bias"]),
    ("bn", "BatchNormalization", ["gamma", "beta", "moving_mean", "moving_variance"],
     ["gamma", "beta", "moving_mean", "moving_variance"]),
    ("c3", "Conv2D", ["kernel"], ["kernel"]),
    ("sep", "SeparableConv2D", ["depthwise_kernel", "pointwise_kernel", "bias"],
     ["depthwise_kernel", "pointwise_kernel", "bias"]),
    ("ln", "LayerNormalization", ["gamma", "beta"], ["gamma", "beta"]),
    ("head", "Dense", ["kernel", "bias"], ["kernel", "bias"]),
]
IN_BLOCK = {"c2", "bn"}
# Where Keras 3's saving_lib puts each layer: snake-case class name, numbered per class.
KERAS3_PATHS = {
    "c1": "layers/conv2d",
    "dw": "layers/depthwise_conv2d",
    "c2": "layers/sequential/layers/conv2d",
    "bn": "layers/sequential/layers/batch_normalization",
    "c3": "layers/conv2d_1",
    "sep": "layers/separable_conv2d",
    "ln": "layers/layer_normalization",
    "head": "layers/dense",
}


def values(spec):
    out = {}
    for k, w in enumerate(spec["weights"]):
        n = int(np.prod(w["shape"])) if w["shape"] else 1
        v = ((k + 1) * 0.01 + np.arange(n, dtype=np.float64) * 0.001).astype(np.float32)
        out[w["name"]] = v.reshape(w["shape"])
    return out


def layer_config(name, cls):
    config = {"name": name, "trainable": True, "dtype": "float32"}
    if name == "c3":
        config["use_bias"] = False
    return {"module": "keras.layers", "class_name": cls, "config": config, "registered_name": None}


def keras3_config():
    def node(src):
        return [{"args": [{"class_name": "__keras_tensor__",
                           "config": {"shape": [None], "dtype": "float32", "keras_history": [src, 0, 0]}}],
                 "kwargs": {}}]
    block = {"module": "keras", "class_name": "Sequential", "registered_name": None,
             "config": {"name": "block", "trainable": True,
                        "layers": [{"module": "keras.layers", "class_name": "InputLayer",
                                    "config": {"batch_shape": [None, 6, 6, 4], "name": "block_input"},
                                    "registered_name": None},
                                   layer_config("c2", "Conv2D"), layer_config("bn", "BatchNormalization")]}}
    layers = [{"module": "keras.layers", "class_name": "InputLayer",
               "config": {"batch_shape": [None, 6, 6, 2], "dtype": "float32", "name": "input"},
               "registered_name": None, "name": "input", "inbound_nodes": []}]
    prev = "input"
    for name, cls in [("c1", "Conv2D"), ("dw", "DepthwiseConv2D"), ("block", None), ("c3", "Conv2D"),
                      ("sep", "SeparableConv2D"), ("ln", "LayerNormalization"), ("flat", "Flatten"),
                      ("head", "Dense")]:
        entry = dict(block) if cls is None else layer_config(name, cls)
        entry["name"] = name
        entry["inbound_nodes"] = node(prev)
        layers.append(entry)
        prev = name
    return {"module": "keras", "class_name": "Functional", "registered_name": "Functional",
            "config": {"name": "test_model", "trainable": True, "layers": layers,
                       "input_layers": [["input", 0, 0]], "output_layers": [["head", 0, 0]]}}


def write_keras3_weights(f, vals):
    f.create_group("vars")
    for path in ["layers/input_layer", "layers/sequential", "layers/flatten"]:
        f.create_group(path + "/vars")
    for name, _, ours, _ in LAYERS:
        g = f.create_group(KERAS3_PATHS[name] + "/vars")
        for i, w in enumerate(ours):
            g[str(i)] = vals[name + "/" + w]
    # An optimizer's state, which a reader of the layers' weights passes over.
    o = f.create_group("optimizer/vars")
    o["0"] = np.array(3, dtype=np.int64)


def write_keras2(f, vals, nested, legacy3, vlen):
    root = f.create_group("model_weights") if nested else f
    if nested:
        f.attrs["model_config"] = json.dumps({"class_name": "Functional", "config": {"name": "test_model"}})
    order = ["input", "c1", "dw", "block" if nested else None, "c3", "sep", "ln", "flat", "head"]
    if not nested:
        order = ["input", "c1", "dw", "c2", "bn", "c3", "sep", "ln", "flat", "head"]
    order = [o for o in order if o]
    names = [o.encode("utf8") for o in order]
    if vlen:  # layer_names in chunks, as Keras splits a list too long for one attribute
        root.attrs["layer_names0"] = np.array(names[:4])
        root.attrs["layer_names1"] = np.array(names[4:])
    else:
        root.attrs["layer_names"] = np.array(names)
    root.attrs["backend"] = b"tensorflow"
    root.attrs["keras_version"] = b"2.15.0"
    by_layer = {name: (ours, k3) for name, _, ours, k3 in LAYERS}
    for group_name in order:
        g = root.create_group(group_name)
        members = ["c2", "bn"] if group_name == "block" else [group_name] if group_name in by_layer else []
        weight_names = []
        for layer in members:
            ours, k3 = by_layer[layer]
            for w, w3 in zip(ours, k3):
                if legacy3:  # Keras 3's legacy .h5: variable paths, nested scopes kept, no ":0"
                    scope = "block/" if layer in IN_BLOCK and nested else ""
                    wn = scope + layer + "/" + w3
                else:
                    wn = layer + "/" + w + ":0"
                weight_names.append(wn)
                g.create_dataset(wn, data=vals[layer + "/" + w])
        if vlen:
            g.attrs.create("weight_names", weight_names, dtype=h5py.string_dtype())
        else:
            # As Keras' save_attributes_to_hdf5_group: np.asarray of the encoded names (an
            # empty list becomes an empty float64 array).
            g.attrs["weight_names"] = np.asarray([w.encode("utf8") for w in weight_names])


def main():
    if sys.argv[1] == "write":
        kind, spec_path, out = sys.argv[2:5]
        vals = values(json.load(open(spec_path)))
        if kind == "keras3_archive":
            buf = io.BytesIO()
            with h5py.File(buf, "w") as f:
                write_keras3_weights(f, vals)
            with zipfile.ZipFile(out, "w") as zf:
                zf.writestr("metadata.json", json.dumps({"keras_version": "3.5.0", "date_saved": "2024-05-01@12:00:00"}))
                zf.writestr("config.json", json.dumps(keras3_config()))
                zf.writestr("model.weights.h5", buf.getvalue())
        elif kind == "keras3_weights_h5":
            with h5py.File(out, "w") as f:
                write_keras3_weights(f, vals)
        else:
            with h5py.File(out, "w") as f:
                write_keras2(f, vals, nested=kind != "keras2_flat", legacy3=kind == "keras3_legacy_h5",
                             vlen=kind == "keras2_flat")
        if len(sys.argv) > 5:
            with open(sys.argv[5], "w") as c:
                json.dump(keras3_config(), c)
        return 0
    if sys.argv[1] == "check_archive":
        spec_path, archive, config_path = sys.argv[2:5]
        vals = values(json.load(open(spec_path)))
        with zipfile.ZipFile(archive) as zf:
            assert sorted(zf.namelist()) == ["config.json", "metadata.json", "model.weights.h5"], zf.namelist()
            meta = json.loads(zf.read("metadata.json"))
            assert set(meta) == {"keras_version", "date_saved"}, meta
            assert meta["keras_version"].startswith("3."), meta
            assert json.loads(zf.read("config.json")) == json.load(open(config_path))
            with h5py.File(io.BytesIO(zf.read("model.weights.h5")), "r") as f:
                assert "vars" in f, list(f)
                for path in ["layers/input_layer/vars", "layers/sequential/vars", "layers/flatten/vars"]:
                    assert path in f and len(f[path]) == 0, path
                for name, _, ours, _ in LAYERS:
                    g = f[KERAS3_PATHS[name] + "/vars"]
                    assert sorted(g.keys()) == [str(i) for i in range(len(ours))], (name, list(g.keys()))
                    for i, w in enumerate(ours):
                        got = g[str(i)][()]
                        assert got.dtype == np.float32, (name, got.dtype)
                        assert np.array_equal(got, vals[name + "/" + w]), (name, w)
        print("archive ok")
        return 0
    return 2


if __name__ == "__main__":
    sys.exit(main())
