// rescaling: Keras' Rescaling, y = x * scale + offset elementwise. scale (required) and
// offset (0) are numbers, or (Keras 3) lists of one value per channel (the last axis).
// No weights. Its op is kRescaling (per-channel scale_values, offset_values); the CPU
// backend's kernel is in backends/cpu/shape_kernels.cc.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "nn/layer.h"

namespace ringtrain::nn {

class Rescaling final : public Layer {
 public:
  static StatusOr<std::unique_ptr<Layer>> Create(const nlohmann::json& j, std::string name, const Shape& in,
                                                 const std::string& ctx);

  const char* type() const override { return "rescaling"; }
  const char* class_name() const override { return "Rescaling"; }
  ops::Op op() const override;

 private:
  Rescaling(std::string name, const Shape& in, std::vector<float> scale, std::vector<float> offset);

  std::vector<float> scale_, offset_;  // one per channel (a scalar repeated)
};

}  // namespace ringtrain::nn
