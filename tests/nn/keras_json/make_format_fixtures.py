"""Writes the keras_json_formats_test fixtures that no tool here can produce: the
model JSON of Keras versions that are not installed (Keras 3, tf.keras 2.15, Keras
2.0, Keras 1.2) and the model.json of the tensorflowjs converter. Each is written in
the exact form that version writes, from its source (cited at each function), with
every layer named so that the tests can refer to them.

Regenerate (the outputs are committed; the tests do not run Python):
  python3 tests/nn/keras_json/make_format_fixtures.py tests/nn/keras_json
"""
import copy
import json
import os
import sys

OUT = sys.argv[1] if len(sys.argv) > 1 else "."


def write(name, obj):
    with open(os.path.join(OUT, name), "w") as f:
        json.dump(obj, f, indent=1)
        f.write("\n")
    print("wrote", name)


# --- Keras 3 (3.6 - 3.12) ------------------------------------------------------------
# keras/src/saving/serialization_lib.py serialize_keras_object: every object is
# {"module", "class_name", "config", "registered_name"} plus "build_config" and
# "compile_config" where the object has them; an object serialized twice inside an
# ObjectSharingScope (saving_lib, as in a .keras archive's config.json) carries
# "shared_object_id" on both copies. Layer.get_config (keras/src/layers/layer.py)
# writes name, trainable and the DTypePolicy; Dense.get_config
# (keras/src/layers/core/dense.py) writes quantization_config; InputLayer.get_config
# (keras/src/layers/core/input_layer.py) writes optional. Functional.get_config
# (keras/src/models/functional.py) writes the layers with "name" and "inbound_nodes"
# ({"args": [__keras_tensor__], "kwargs": {}}), and input_layers / output_layers as a
# bare [name, node, tensor] when the model was built with one tensor (not a list).
# Model.to_json() is json.dumps(serialize_keras_object(model)).

def k3_policy():
    return {"module": "keras", "class_name": "DTypePolicy", "config": {"name": "float32"}, "registered_name": None}


def k3_object(module, cls, config, shared_id=None):
    obj = {"module": module, "class_name": cls, "config": config, "registered_name": None}
    if shared_id is not None:
        obj["shared_object_id"] = shared_id
    return obj


def k3_tensor(shape, layer):
    return {"class_name": "__keras_tensor__",
            "config": {"shape": shape, "dtype": "float32", "keras_history": [layer, 0, 0]}}


def k3_layer(cls, config, input_shape, inbound):
    return {"module": "keras.layers", "class_name": cls, "config": config, "registered_name": None,
            "build_config": {"input_shape": input_shape}, "name": config["name"],
            "inbound_nodes": [{"args": [inbound], "kwargs": {}}]}


def keras3_every_field():
    # One initializer object given to two layers: shared_object_id on both copies.
    shared = 140312345678912
    init = k3_object("keras.initializers", "GlorotUniform", {"seed": None}, shared)
    zeros = k3_object("keras.initializers", "Zeros", {})
    ones = k3_object("keras.initializers", "Ones", {})
    image = {"module": "keras.layers", "class_name": "InputLayer",
             "config": {"batch_shape": [None, 8, 8, 3], "dtype": "float32", "sparse": False, "ragged": False,
                        "name": "image", "optional": False},
             "registered_name": None, "name": "image", "inbound_nodes": []}
    conv = k3_layer("Conv2D", {
        "name": "conv", "trainable": True, "dtype": k3_policy(), "filters": 4, "kernel_size": [3, 3],
        "strides": [1, 1], "padding": "same", "data_format": "channels_last", "dilation_rate": [1, 1], "groups": 1,
        "activation": "relu", "use_bias": True, "kernel_initializer": copy.deepcopy(init), "bias_initializer": zeros,
        "kernel_regularizer": None, "bias_regularizer": None, "activity_regularizer": None,
        "kernel_constraint": None, "bias_constraint": None}, [None, 8, 8, 3], k3_tensor([None, 8, 8, 3], "image"))
    bn = k3_layer("BatchNormalization", {
        "name": "bn", "trainable": True, "dtype": k3_policy(), "axis": -1, "momentum": 0.99, "epsilon": 0.001,
        "center": True, "scale": True, "beta_initializer": zeros, "gamma_initializer": ones,
        "moving_mean_initializer": zeros, "moving_variance_initializer": ones, "beta_regularizer": None,
        "gamma_regularizer": None, "beta_constraint": None, "gamma_constraint": None, "synchronized": False},
        [None, 8, 8, 4], k3_tensor([None, 8, 8, 4], "conv"))
    flatten = k3_layer("Flatten", {"name": "flatten", "trainable": True, "dtype": k3_policy(),
                                   "data_format": "channels_last"}, [None, 8, 8, 4], k3_tensor([None, 8, 8, 4], "bn"))
    logits = k3_layer("Dense", {
        "name": "logits", "trainable": True, "dtype": k3_policy(), "units": 10, "activation": "linear",
        "use_bias": True, "kernel_initializer": copy.deepcopy(init), "bias_initializer": zeros,
        "kernel_regularizer": None, "bias_regularizer": None, "kernel_constraint": None, "bias_constraint": None,
        "quantization_config": None}, [None, 256], k3_tensor([None, 256], "flatten"))
    return {
        "module": "keras.src.models.functional", "class_name": "Functional",
        "config": {"name": "every_field", "trainable": True, "layers": [image, conv, bn, flatten, logits],
                   "input_layers": ["image", 0, 0], "output_layers": ["logits", 0, 0]},
        "registered_name": "Functional",
        "build_config": {"input_shape": None},
        "compile_config": {
            "optimizer": k3_object("keras.optimizers", "Adam", {
                "name": "adam", "learning_rate": 0.0010000000474974513, "weight_decay": None, "clipnorm": None,
                "global_clipnorm": None, "clipvalue": None, "use_ema": False, "ema_momentum": 0.99,
                "ema_overwrite_frequency": None, "loss_scale_factor": None, "gradient_accumulation_steps": None,
                "beta_1": 0.9, "beta_2": 0.999, "epsilon": 1e-07, "amsgrad": False}),
            "loss": "sparse_categorical_crossentropy", "loss_weights": None, "metrics": ["accuracy"],
            "weighted_metrics": None, "run_eagerly": False, "steps_per_execution": 1, "jit_compile": False},
    }


# Keras 3's operations in a Functional model: x + y is KerasTensor.__add__ ->
# ops.Add().symbolic_call (keras/src/backend/common/keras_tensor.py), and
# keras.ops.concatenate / reshape are Concatenate(axis) and Reshape(newshape)
# operations (keras/src/ops/numpy.py). serialize_keras_object finds no public class
# for them: module "keras.src.ops.numpy", registered_name the class name, config the
# constructor's arguments and the name; no build_config. Their node's args are the
# operands.

def k3_op(cls, config, args):
    return {"module": "keras.src.ops.numpy", "class_name": cls, "config": config, "registered_name": cls,
            "name": config["name"], "inbound_nodes": [{"args": args, "kwargs": {}}]}


def keras3_ops():
    image = {"module": "keras.layers", "class_name": "InputLayer",
             "config": {"batch_shape": [None, 8, 8, 3], "dtype": "float32", "sparse": False, "ragged": False,
                        "name": "image", "optional": False},
             "registered_name": None, "name": "image", "inbound_nodes": []}

    def conv(name, kernel):
        return k3_layer("Conv2D", {
            "name": name, "trainable": True, "dtype": k3_policy(), "filters": 4, "kernel_size": [kernel, kernel],
            "strides": [1, 1], "padding": "same", "data_format": "channels_last", "dilation_rate": [1, 1],
            "groups": 1, "activation": "linear", "use_bias": True,
            "kernel_initializer": k3_object("keras.initializers", "GlorotUniform", {"seed": None}),
            "bias_initializer": k3_object("keras.initializers", "Zeros", {}), "kernel_regularizer": None,
            "bias_regularizer": None, "activity_regularizer": None, "kernel_constraint": None,
            "bias_constraint": None}, [None, 8, 8, 3], k3_tensor([None, 8, 8, 3], "image"))

    add = k3_op("Add", {"name": "add"}, [k3_tensor([None, 8, 8, 4], "conv_a"), k3_tensor([None, 8, 8, 4], "conv_b")])
    concat = k3_op("Concatenate", {"axis": -1, "name": "concatenate"},
                   [[k3_tensor([None, 8, 8, 4], "add"), k3_tensor([None, 8, 8, 4], "conv_a")]])
    reshape = k3_op("Reshape", {"newshape": [-1, 512], "name": "reshape"}, [k3_tensor([None, 8, 8, 8], "concatenate")])
    logits = k3_layer("Dense", {
        "name": "logits", "trainable": True, "dtype": k3_policy(), "units": 10, "activation": "linear",
        "use_bias": True, "kernel_initializer": k3_object("keras.initializers", "GlorotUniform", {"seed": None}),
        "bias_initializer": k3_object("keras.initializers", "Zeros", {}), "kernel_regularizer": None,
        "bias_regularizer": None, "kernel_constraint": None, "bias_constraint": None, "quantization_config": None},
        [None, 512], k3_tensor([None, 512], "reshape"))
    return {"module": "keras.src.models.functional", "class_name": "Functional",
            "config": {"name": "ops3", "trainable": True,
                       "layers": [image, conv("conv_a", 3), conv("conv_b", 1), add, concat, reshape, logits],
                       "input_layers": [["image", 0, 0]], "output_layers": [["logits", 0, 0]]},
            "registered_name": "Functional", "build_config": {"input_shape": None}}


# --- tf.keras 2.4 - 2.12 --------------------------------------------------------------
# keras/engine/functional.py get_network_config with the legacy serialization that
# Model.to_json() uses up to 2.12 (2.13+ serializes each layer with
# serialization_lib, adding module, registered_name and build_config, as Keras 3
# does): entries {"class_name", "config", "name", "inbound_nodes"}; a
# layer's node is [[layer, node, tensor, kwargs]]. A TensorFlow function called on Keras
# tensors is a TFOpLambda (tf_keras/layers/core/tf_op_layer.py: config "function" is
# the TF API symbol, the name "tf." + symbol) whose node keeps the call's structure
# (tf_keras/engine/node.py Node.serialize with _preserve_input_structure_in_config): a
# single first argument is one flat [layer, node, tensor, kwargs], a list is a list of
# them, and the other arguments are kwargs (tensors as [layer, node, tensor]).
# BatchNormalization's build() turns axis into a list of non-negative axes ([3]).

def k2_conv(name, filters, kernel, padding, inbound):
    return {"class_name": "Conv2D", "config": {
        "name": name, "trainable": True, "dtype": "float32", "filters": filters, "kernel_size": [kernel, kernel],
        "strides": [1, 1], "padding": padding, "data_format": "channels_last", "dilation_rate": [1, 1],
        "groups": 1, "activation": "linear", "use_bias": True,
        "kernel_initializer": {"class_name": "GlorotUniform", "config": {"seed": None}},
        "bias_initializer": {"class_name": "Zeros", "config": {}}, "kernel_regularizer": None,
        "bias_regularizer": None, "activity_regularizer": None, "kernel_constraint": None, "bias_constraint": None},
        "name": name, "inbound_nodes": [[[inbound, 0, 0, {}]]]}


def tf_op(function, node):
    name = "tf." + function
    return {"class_name": "TFOpLambda",
            "config": {"name": name, "trainable": True, "dtype": "float32", "function": function},
            "name": name, "inbound_nodes": [node]}


def tfkeras2_tfop():
    layers = [
        {"class_name": "InputLayer", "config": {"batch_input_shape": [None, 8, 8, 3], "dtype": "float32",
                                                "sparse": False, "ragged": False, "name": "image"},
         "name": "image", "inbound_nodes": []},
        k2_conv("conv_a", 4, 3, "same", "image"),
        {"class_name": "BatchNormalization", "config": {
            "name": "bn", "trainable": True, "dtype": "float32", "axis": [3], "momentum": 0.99, "epsilon": 0.001,
            "center": True, "scale": True, "beta_initializer": {"class_name": "Zeros", "config": {}},
            "gamma_initializer": {"class_name": "Ones", "config": {}},
            "moving_mean_initializer": {"class_name": "Zeros", "config": {}},
            "moving_variance_initializer": {"class_name": "Ones", "config": {}}, "beta_regularizer": None,
            "gamma_regularizer": None, "beta_constraint": None, "gamma_constraint": None},
         "name": "bn", "inbound_nodes": [[["conv_a", 0, 0, {}]]]},
        k2_conv("conv_b", 4, 1, "valid", "image"),
        # y = bn + conv_b
        tf_op("__operators__.add", ["bn", 0, 0, {"y": ["conv_b", 0, 0], "name": None}]),
        # tf.concat([y, conv_a], axis=-1)
        tf_op("concat", [["tf.__operators__.add", 0, 0, {"axis": -1, "name": None}],
                         ["conv_a", 0, 0, {"axis": -1, "name": None}]]),
        # tf.reshape(x, [-1, 512])
        tf_op("reshape", ["tf.concat", 0, 0, {"shape": [-1, 512], "name": None}]),
        {"class_name": "Dense", "config": {
            "name": "logits", "trainable": True, "dtype": "float32", "units": 10, "activation": "linear",
            "use_bias": True, "kernel_initializer": {"class_name": "GlorotUniform", "config": {"seed": None}},
            "bias_initializer": {"class_name": "Zeros", "config": {}}, "kernel_regularizer": None,
            "bias_regularizer": None, "activity_regularizer": None, "kernel_constraint": None,
            "bias_constraint": None},
         "name": "logits", "inbound_nodes": [[["tf.reshape", 0, 0, {}]]]},
    ]
    return {"class_name": "Functional",
            "config": {"name": "ops", "trainable": True, "layers": layers, "input_layers": [["image", 0, 0]],
                       "output_layers": [["logits", 0, 0]]},
            "keras_version": "2.12.0", "backend": "tensorflow"}


# --- Keras 2.0.8 ---------------------------------------------------------------------
# keras/models.py (2.0.8) Sequential.get_config: the bare list of its layers' configs,
# each {"class_name", "config"}; a nested Sequential is such an entry whose config is
# again a list, so it has no name. The first layer of a Sequential carries
# batch_input_shape and dtype (Layer.get_config). Auto names count from 1
# ("conv2d_1"). Model.to_json() adds keras_version and backend.

def keras2_0_nested_sequential():
    features = [
        {"class_name": "Conv2D", "config": {
            "name": "conv2d_1", "trainable": True, "batch_input_shape": [None, 16, 16, 3], "dtype": "float32",
            "filters": 4, "kernel_size": [3, 3], "strides": [1, 1], "padding": "valid",
            "data_format": "channels_last", "dilation_rate": [1, 1], "activation": "relu", "use_bias": True,
            "kernel_initializer": {"class_name": "VarianceScaling",
                                   "config": {"scale": 1.0, "mode": "fan_avg", "distribution": "uniform",
                                              "seed": None}},
            "bias_initializer": {"class_name": "Zeros", "config": {}}, "kernel_regularizer": None,
            "bias_regularizer": None, "activity_regularizer": None, "kernel_constraint": None,
            "bias_constraint": None}},
        {"class_name": "MaxPooling2D", "config": {"name": "max_pooling2d_1", "trainable": True, "pool_size": [2, 2],
                                                  "padding": "valid", "strides": [2, 2],
                                                  "data_format": "channels_last"}},
    ]
    return {"class_name": "Sequential", "config": [
        {"class_name": "Sequential", "config": features},
        {"class_name": "Flatten", "config": {"name": "flatten_1", "trainable": True}},
        {"class_name": "Dense", "config": {
            "name": "dense_1", "trainable": True, "units": 5, "activation": "softmax", "use_bias": True,
            "kernel_initializer": {"class_name": "VarianceScaling",
                                   "config": {"scale": 1.0, "mode": "fan_avg", "distribution": "uniform",
                                              "seed": None}},
            "bias_initializer": {"class_name": "Zeros", "config": {}}, "kernel_regularizer": None,
            "bias_regularizer": None, "activity_regularizer": None, "kernel_constraint": None,
            "bias_constraint": None}},
    ], "keras_version": "2.0.8", "backend": "tensorflow"}


# --- Keras 1.2.2 ---------------------------------------------------------------------
# keras/layers/convolutional.py (1.2.2) Convolution2D.get_config: nb_filter, nb_row,
# nb_col, init, border_mode, subsample, dim_ordering, W_regularizer, ...;
# keras/layers/core.py Dense.get_config: output_dim, init, W_regularizer, ..., bias,
# input_dim; Merge.get_config: layers, mode, concat_axis, ...

def keras1_sequential():
    return {"class_name": "Sequential", "config": [
        {"class_name": "Convolution2D", "config": {
            "name": "convolution2d_1", "trainable": True, "batch_input_shape": [None, 28, 28, 1],
            "input_dtype": "float32", "nb_filter": 8, "nb_row": 3, "nb_col": 3, "init": "glorot_uniform",
            "activation": "relu", "border_mode": "valid", "subsample": [1, 1], "dim_ordering": "tf",
            "W_regularizer": None, "b_regularizer": None, "activity_regularizer": None, "W_constraint": None,
            "b_constraint": None, "bias": True}},
        {"class_name": "Flatten", "config": {"name": "flatten_1", "trainable": True}},
        {"class_name": "Dense", "config": {
            "name": "dense_1", "trainable": True, "output_dim": 10, "init": "glorot_uniform",
            "activation": "softmax", "W_regularizer": None, "b_regularizer": None, "activity_regularizer": None,
            "W_constraint": None, "b_constraint": None, "bias": True, "input_dim": 5408}},
    ], "keras_version": "1.2.2", "backend": "tensorflow"}


# --- tensorflowjs converter (tensorflowjs 4.x) ------------------------------------------
# tfjs-converter/python/tensorflowjs/converters/keras_h5_conversion.py: model.json is
# json.dump({"format": "layers-model", "generatedBy": "keras v" + keras_version,
# "convertedBy": "TensorFlow.js Converter v...", "modelTopology": {"keras_version",
# "backend", "model_config": <the h5 file's model_config>, "training_config": ...},
# "weightsManifest": [{"paths": ["group1-shard1of1.bin"], "weights": [{name, shape,
# dtype}]}]}). The model_config here is tf.keras 2's JSON of the residual fixture
# (tfjs_residual.json, whose format is tf.keras 2's), and h5 saving's shared-object
# scope marks its shared initializer with shared_object_id.

def tfjs_converter(residual):
    model_config = {"class_name": residual["class_name"], "config": copy.deepcopy(residual["config"])}
    # The residual block's weights in the order of its h5 file (layer by layer).
    weights = [{"name": n, "shape": shape, "dtype": "float32"} for n, shape in [
        ("conv_a/kernel", [3, 3, 3, 16]),
        ("bn_a/gamma", [16]), ("bn_a/beta", [16]), ("bn_a/moving_mean", [16]), ("bn_a/moving_variance", [16]),
        ("conv_b/kernel", [3, 3, 16, 16]),
        ("shortcut/kernel", [1, 1, 3, 16]), ("shortcut/bias", [16]),
        ("bn_b/gamma", [16]), ("bn_b/beta", [16]), ("bn_b/moving_mean", [16]), ("bn_b/moving_variance", [16]),
        ("logits/kernel", [16, 10]), ("logits/bias", [10])]]
    model_config["config"]["layers"][1]["config"]["kernel_initializer"]["shared_object_id"] = 1
    model_config["config"]["layers"][4]["config"]["kernel_initializer"]["shared_object_id"] = 1
    return {
        "format": "layers-model", "generatedBy": "keras v2.15.0", "convertedBy": "TensorFlow.js Converter v4.22.0",
        "modelTopology": {
            "keras_version": "2.15.0", "backend": "tensorflow", "model_config": model_config,
            "training_config": {"loss": "sparse_categorical_crossentropy", "metrics": [["accuracy"]],
                                "weighted_metrics": None, "loss_weights": None,
                                "optimizer_config": {"class_name": "Adam", "config": {
                                    "name": "Adam", "learning_rate": 0.001, "beta_1": 0.9, "beta_2": 0.999,
                                    "epsilon": 1e-07, "amsgrad": False}}}},
        "weightsManifest": [{"paths": ["group1-shard1of1.bin"], "weights": weights}],
    }


write("keras3_every_field.json", keras3_every_field())
write("keras3_ops.json", keras3_ops())
write("tfkeras2_tfop.json", tfkeras2_tfop())
write("keras2_0_nested_sequential.json", keras2_0_nested_sequential())
write("keras1_sequential.json", keras1_sequential())
with open(os.path.join(OUT, "tfjs_residual.json")) as f:
    write("tfjs_converter_model.json", tfjs_converter(json.load(f)))
