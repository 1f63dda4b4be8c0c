// global_average_pooling2d / global_max_pooling2d: Keras GlobalAveragePooling2D and
// GlobalMaxPooling2D over NHWC input [H, W, C] -> [C] ([1, 1, C] with keepdims). Their
// ops are kGlobalAvgPool2D and kGlobalMaxPool2D; the CPU backend's kernel is in
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

namespace ringtrain::nn {

class GlobalPool2D final : public Layer {
 public:
  // Fields: keepdims (false). `in` must be [H, W, C].
  static StatusOr<std::unique_ptr<Layer>> CreateAverage(const nlohmann::json& j, std::string name, const Shape& in,
                                                        const std::string& ctx);
  static StatusOr<std::unique_ptr<Layer>> CreateMax(const nlohmann::json& j, std::string name, const Shape& in,
                                                    const std::string& ctx);

  const char* type() const override { return max_ ? "global_max_pooling2d" : "global_average_pooling2d"; }
  const char* class_name() const override { return max_ ? "GlobalMaxPooling2D" : "GlobalAveragePooling2D"; }
  ops::Op op() const override;

 private:
  static StatusOr<std::unique_ptr<Layer>> Create(const nlohmann::json& j, std::string name, const Shape& in,
                                                 const std::string& ctx, bool max);
  GlobalPool2D(std::string name, const Shape& in, bool keepdims, bool max);

  bool max_;
};

}  // namespace ringtrain::nn
