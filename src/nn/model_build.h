// Internal to src/nn: building a model's layers from the job's "model" section. The
// layers hold shapes only -- parameters are bound later by Model::FromJson, and buffers
// grow on the first Forward -- so building them allocates nothing large. Model::FromJson
// and the memory estimate (nn/model_memory.h) both start here.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "nn/layer.h"

namespace ringtrain::nn::internal {

// The kernels index parameters and rows with 32-bit ints.
constexpr size_t kMaxParams = static_cast<size_t>(std::numeric_limits<int32_t>::max());

// Validates `model_json` (known fields, input_shape, every layer) and builds its
// layers. INVALID_ARGUMENT naming the layer and field; never throws.
Status BuildModelLayers(const nlohmann::json& model_json, Shape* input_shape,
                        std::vector<std::unique_ptr<Layer>>* layers);

}  // namespace ringtrain::nn::internal
