// max_pooling2d: Keras MaxPooling2D over NHWC input (ties go to the first cell in
// row-major window order, padding cells never win). Its op is kMaxPool2D; the CPU
// backend's kernel is in backends/cpu/pool_kernels.cc.
#pragma once

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "nn/layer.h"
#include "nn/layers/window.h"

namespace ringtrain::nn {

class MaxPool2D final : public Layer {
 public:
  // Fields: pool_size (2), strides (= pool_size), padding ("valid"). `in` must be [H, W, C].
  static StatusOr<std::unique_ptr<Layer>> Create(const nlohmann::json& j, std::string name, const Shape& in,
                                                 const std::string& ctx);

  const char* type() const override { return "max_pooling2d"; }
  const char* class_name() const override { return "MaxPooling2D"; }
  ops::Op op() const override;

 private:
  MaxPool2D(std::string name, const Shape& in, const Window2D& g);

  Window2D g_;
};

}  // namespace ringtrain::nn
