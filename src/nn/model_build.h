// Internal to src/nn: building a model's layer graph from the job's "model" section.
// The layers hold shapes only -- parameters are bound later by Model::FromJson, and
// buffers grow on the first Forward -- so building them allocates nothing large.
// Model::FromJson and the memory estimate (nn/model_memory.h) both start here.
//
// The graph is Keras' Functional API in the compact form: each layer names its
// "inputs" (earlier layers, or the model input by "input_name", default "input");
// without "inputs" a layer takes the previous layer's output (the model input for the
// first), which makes a plain list a Sequential model. The last layer is the output.
// {"shares": "name", "inputs": [...]} calls an earlier layer again (Keras' shared layer):
// the same type, arguments and weights, on other inputs of the same shape.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "nn/layer.h"
#include "nn/model.h"

namespace ringtrain::nn::internal {

// The kernels index parameters and rows with 32-bit ints.
constexpr size_t kMaxParams = static_cast<size_t>(std::numeric_limits<int32_t>::max());

// The model input's index in LayerGraph::inputs.
constexpr int kModelInput = -1;

struct LayerGraph {
  Shape input_shape;  // with several inputs: {the floats of all of them}
  std::string input_name = "input";
  // Several inputs ("inputs" in the model JSON): each is a crop of the input row into a
  // reshape (two internal layers at the front of `layers`, the reshape named as the input).
  // Several outputs ("outputs"): a last internal layer lays them side by side. Empty for a
  // model with one input (one output).
  std::vector<ModelIo> model_inputs, model_outputs;  // in the model's order
  std::vector<bool> internal;  // per layer: made for several inputs or outputs, not in the JSON
  // Per layer: the earlier layer it calls again ({"shares": "name"}: the same weights, its
  // gradients summed into that layer's), or -1.
  std::vector<int> shares;
  std::vector<std::unique_ptr<Layer>> layers;  // in a topological order; the last is the output
  std::vector<std::vector<int>> inputs;        // per layer: earlier layers' indices or kModelInput
  std::vector<int> consumers;                  // per layer: how many inputs of later layers it feeds
  bool sequential = true;                      // every layer takes the one before it

  // has_trainable_upstream()[i]: layer i or a layer feeding it (transitively) has
  // trainable weights, so a gradient must flow into layer i's output.
  std::vector<bool> TrainableUpstream() const;
};

// Validates `model_json` (known fields, input_shape, every layer and its inputs) and
// builds the graph. INVALID_ARGUMENT naming the layer and field; never throws.
Status BuildLayerGraph(const nlohmann::json& model_json, LayerGraph* graph);

}  // namespace ringtrain::nn::internal
