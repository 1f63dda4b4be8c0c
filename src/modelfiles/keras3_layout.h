// Keras 3's layout of a model's weights in HDF5 (model.weights.h5 in a .keras archive, and
// what model.save_weights("x.weights.h5") writes), as keras/src/saving/saving_lib.py saves it:
//
//   vars/                                 the model's own variables (none; the group exists)
//   layers/<layer key>/vars/<i>           variable i of a layer
//   layers/<model key>/layers/<key>/...   the layers of a nested model, the same way
//
// A layer's key is not its name: it is its class in snake case ("Dense" -> "dense",
// "DepthwiseConv2D" -> "depthwise_conv2d", "ReLU" -> "re_lu"), with "_1", "_2", ... for the
// second, third, ... layer of that class among the model's layers (model.layers: a
// Functional model's InputLayers included, a Sequential's left out). So the layer names come
// from the model's config (config.json), in the order of its "layers" list, which is
// model.layers' order. Variable i is the layer's i-th variable: its trainable variables,
// then its non-trainable ones, each in the order build() creates them, which for the layer
// classes ringtrain has is the order of the layer's weights in nn::Model's ParamInfo list:
//   Dense, Conv2D, Conv2DTranspose: kernel, bias;  DepthwiseConv2D: depthwise_kernel (Keras 3 calls it
//   "kernel"), bias;  SeparableConv2D: depthwise_kernel, pointwise_kernel, bias;
//   BatchNormalization: gamma, beta, moving_mean, moving_variance;  LayerNormalization:
//   gamma, beta (each bias, gamma or beta only when use_bias, scale, center say so).
//
// Errors: DATA_LOSS naming the layer for a config or file that does not follow the layout;
// no Subject (the callers add the path and kStorage). Threading: pure functions, and the
// H5File rules (hdf5_file.h) for the ones that take a file.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "checkpoint/safetensors.h"
#include "common/status.h"
#include "modelfiles/hdf5_file.h"

namespace ringtrain::modelfiles {

// A layer of a Keras 3 model config, where its variables are.
struct Keras3Layer {
  std::string path;        // "layers/dense_1": variable i is at path + "/vars/" + i
  std::string name;        // the layer's name: "head"
  std::string class_name;  // "Dense"
  nlohmann::json config;   // its "config"
};

// Keras' naming.to_snake_case.
std::string SnakeCase(const std::string& class_name);

// The layers of a Keras 3 model config (config.json's object: {"class_name": "Functional"
// or "Sequential", "config": {"layers": [...]}}), nested models walked into, in the order
// saving_lib visits them. The models themselves are listed too (their own "vars" groups).
StatusOr<std::vector<Keras3Layer>> Keras3Layers(const nlohmann::json& model_config);

// ringtrain's names of a layer's variables in Keras' order (the table above); an empty list
// for a class without weights that ringtrain knows; nullopt for a class it does not know.
std::optional<std::vector<std::string>> Keras3VariableNames(const std::string& class_name,
                                                            const nlohmann::json& config);

// Reads a Keras 3 weights file: each layer's variables named "<layer name>/<weight name>".
// For a class the table does not know, the names come from `model_weight_names`
// ("<layer>/<weight>" in the model's ParamInfo order, may be null) when that layer has as
// many weights there as variables in the file. At most `budget` values are read.
StatusOr<std::map<std::string, checkpoint::Tensor>> ReadKeras3Weights(
    const H5File& file, const nlohmann::json& model_config, const std::vector<std::string>* model_weight_names,
    uint64_t budget);

// Writes `tensors` ("<layer>/<weight>") into `file` in the layout above for the model
// config; every variable a layer has in Keras must be in `tensors` (INVALID_ARGUMENT naming
// it otherwise). `model_weight_names` as for ReadKeras3Weights.
Status WriteKeras3Weights(H5File* file, const nlohmann::json& model_config,
                          const std::map<std::string, checkpoint::Tensor>& tensors,
                          const std::vector<std::string>* model_weight_names);

}  // namespace ringtrain::modelfiles
