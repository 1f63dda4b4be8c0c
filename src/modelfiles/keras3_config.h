// A compact model ({"input_shape", "input_name"?, "name"?, "layers": [{"type", "name"?,
// "inputs"?, <Keras arguments>}]}, nn/model_build.h) written as a Keras 3 Functional model
// config: what config.json of a .keras archive holds, for keras.saving.load_model.
//
//   {"module": "keras", "class_name": "Functional", "registered_name": "Functional",
//    "config": {"name", "trainable": true,
//               "layers": [{"module": "keras.layers", "class_name": "InputLayer", ...},
//                          {"module": "keras.layers", "class_name": "Conv2D", "config": {...},
//                           "registered_name": null, "name": "conv2d",
//                           "inbound_nodes": [{"args": [<__keras_tensor__>], "kwargs": {}}]}, ...],
//               "input_layers": ["input", 0, 0], "output_layers": ["dense", 0, 0]}}
//
// Each layer's class is Keras' (the job file's snake-case type mapped to it), its config the
// compact layer's Keras arguments as they are, with its name, "trainable" and the float32
// dtype; arguments only tf.keras 2 has, which ringtrain accepts at their defaults
// (BatchNormalization's renorm, fused, ...), are left out. Unnamed layers get the names the
// model builder gives them (Keras' per-class auto names), so the config's names are the
// model's weight names' layers. Merge layers (Add, Multiply, Concatenate) take a list.
//
// Errors: INVALID_ARGUMENT (no Subject) for a model the builder would refuse in a way this
// needs (no layers, an unknown type, an "inputs" naming no earlier layer). Threading: a pure
// function.
#pragma once

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace ringtrain::modelfiles {

StatusOr<nlohmann::json> Keras3ConfigFromCompact(const nlohmann::json& compact_model);

}  // namespace ringtrain::modelfiles
