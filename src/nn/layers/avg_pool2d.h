// average_pooling2d: Keras AveragePooling2D over NHWC input. Each output is the mean of
// its window's cells that lie inside the input ('same' padding counts no padding cell,
// as TensorFlow does). Its op is kAvgPool2D; the CPU backend's kernel is in
// backends/cpu/pool_kernels.cc.
//
// Threading: one thread at a time (the owning Model's). Errors: Create returns
// INVALID_ARGUMENT naming the field.
#pragma once

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "nn/layer.h"
#include "nn/layers/window.h"

namespace ringtrain::nn {

class AvgPool2D final : public Layer {
 public:
  // Fields: pool_size (2), strides (= pool_size), padding ("valid"). `in` must be [H, W, C].
  static StatusOr<std::unique_ptr<Layer>> Create(const nlohmann::json& j, std::string name, const Shape& in,
                                                 const std::string& ctx);

  const char* type() const override { return "average_pooling2d"; }
  const char* class_name() const override { return "AveragePooling2D"; }
  ops::Op op() const override;

 private:
  AvgPool2D(std::string name, const Shape& in, const Window2D& g);

  Window2D g_;
};

}  // namespace ringtrain::nn
