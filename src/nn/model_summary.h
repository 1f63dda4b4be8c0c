// Keras' model.summary() for a built model: one row per layer (name, class, output
// shape, parameter count, the layers it is connected to) and the trainable and
// non-trainable totals, as a table (the text tf.keras prints, with Keras 3's byte sizes
// after the totals) or as JSON (`ringtrain summary --json`).
//
// Parameters count as Keras counts them: a frozen layer's weights and BatchNormalization's
// moving statistics are non-trainable. The model input is listed as an InputLayer row
// where Keras lists it: in functional models (any layer with "inputs").
//
// Threading: pure functions of the model.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "nn/model.h"

namespace ringtrain::nn {

struct SummaryRow {
  std::string name;
  std::string class_name;          // Keras' class: "Conv2D"
  std::vector<int> output_shape;   // per example (the batch dimension is None)
  uint64_t params = 0;             // every weight of the layer, in floats
  uint64_t trainable_params = 0;
  std::vector<std::string> connected_to;  // the layers (or the model input) it takes
};

struct ModelSummary {
  std::string name;        // the model's name, or "sequential" / "functional"
  bool sequential = true;  // every layer takes the one before it
  std::string input_name;
  std::vector<int> input_shape;
  std::vector<ModelIo> inputs;  // every input (one row each), in the model's order
  std::vector<std::string> outputs;  // the output layers, in order
  std::vector<SummaryRow> layers;
  uint64_t total_params = 0, trainable_params = 0, non_trainable_params = 0;
};

// `name`: the model's name ("" for Keras' default, "sequential" or "functional").
ModelSummary Summarize(const Model& model, const std::string& name = "");

// The table, ending in a newline.
std::string SummaryTable(const ModelSummary& summary);

// {"name", "class_name": "Sequential" | "Functional", "input": {"name", "shape": [null, ...]},
//  "inputs": [{"name", "shape"}, ...], "outputs": [layer names],
//  "layers": [{"name", "class_name", "output_shape": [null, ...], "params",
//  "trainable_params", "non_trainable_params", "connected_to": [...]}],
//  "total_params", "trainable_params", "non_trainable_params"}.
nlohmann::json SummaryJson(const ModelSummary& summary);

// Keras 3's readable_memory_size of `floats` float32 values: "136.04 KB" (1024 steps).
std::string ReadableFloatBytes(uint64_t floats);

}  // namespace ringtrain::nn
