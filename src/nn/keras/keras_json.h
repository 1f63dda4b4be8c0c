// Keras model JSON (what model.to_json() writes) translated into the compact model
// form that the model builder reads: {"input_shape": [h, w, c], "name": ...,
// "input_name": ..., "layers": [{"type": <class name>, "name", "trainable",
// "inputs": [...], <Keras config arguments>}, ...]}.
//
// Formats: tf.keras 2 and TensorFlow.js (inbound nodes as [[layer, node, tensor,
// kwargs], ...]), Keras 2.0-2.2 (a Sequential's config as the bare list of its layers;
// nested models without a name get Keras' default names, "sequential", "sequential_1",
// ..., inner models first, skipping the names the JSON uses) and Keras 3 (inbound
// nodes as {"args": [__keras_tensor__ ...], "kwargs": {}}, "batch_shape", dtype
// policies; "module", "registered_name", "build_config", "compile_config" and
// "shared_object_id" carry nothing that changes the model). Models: Sequential and
// Functional ("Model" in tf.keras 2 and tfjs) with one input and one output; models
// nested as layers are flattened into the outer model, keeping their layers' own
// names. TensorFlow ops (tf.keras 2's TFOpLambda) and Keras 3 ops called on tensors
// become the layers that compute them (keras_json_tfop.h). Keras 1, Lambda, custom
// classes and subclassed models are refused with what to do (keras_json_classes.h).
// A TensorFlow.js model.json or a file holding the JSON as a string is unwrapped by
// model_file.h, not here.
//
// This is JSON to JSON only: the layer classes and their arguments are passed on
// unchecked for the builder to validate, except the keys that describe the format
// or what ringtrain cannot honour (dtype, data_format, constraints, activity
// regularizers, input shapes): those are consumed, dropped when they ask for the
// default, and refused otherwise. Anything structural not understood is refused.
//
// In the compact form "inputs" is written only where it is not the previous layer
// (the model input for the first layer), and "input_name" only where a layer names
// the model input in "inputs".
//
// Errors: INVALID_ARGUMENT, one line, "model.keras_json: ..." and, for a layer,
// "model.keras_json: layer 'conv2d_3' (Conv2D): ..." naming the key. No Subject is
// set (the job parser marks them kConfig). Nothing throws; recursion is bounded
// (models nested at most kMaxKerasModelNesting deep).
//
// Threading: a pure function.
#pragma once

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace ringtrain::nn {

constexpr int kMaxKerasModelNesting = 16;

StatusOr<nlohmann::json> KerasJsonToCompact(const nlohmann::json& keras_model);

}  // namespace ringtrain::nn
