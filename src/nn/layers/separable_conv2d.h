// separable_conv2d: Keras SeparableConv2D over NHWC input: a depthwise convolution
// (depthwise_kernel [kh, kw, c, m], no bias, linear) into c * m channels, then a
// pointwise 1x1 convolution (pointwise_kernel [1, 1, c * m, filters]) with the bias
// [filters] and the activation. Its op is kSeparableConv2D; the CPU backend's kernel is
// in backends/cpu/depthwise_kernels.cc.
//
// Threading: one thread at a time (the owning Model's). Errors: Create returns
// INVALID_ARGUMENT naming the field.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "nn/keras/json_fields.h"
#include "nn/layer.h"
#include "nn/layers/window.h"

namespace ringtrain::nn {

class SeparableConv2D final : public Layer {
 public:
  // Fields: filters, kernel_size, strides (1), padding ("valid"), depth_multiplier (1), groups (only 1),
  // dilation_rate (1), activation, use_bias (true); the initializers only at Keras'
  // defaults. `in` must be [H, W, C].
  static StatusOr<std::unique_ptr<Layer>> Create(const nlohmann::json& j, std::string name, const Shape& in,
                                                 const std::string& ctx);

  const char* type() const override { return "separable_conv2d"; }
  const char* class_name() const override { return "SeparableConv2D"; }
  std::vector<ParamSpec> ParamSpecs() const override;
  ops::Op op() const override;

 private:
  SeparableConv2D(std::string name, const Shape& in, const Window2D& g, int multiplier, int filters, Activation act,
                  bool use_bias);
  int mid_channels() const { return g_.channels * multiplier_; }

  Window2D g_;
  int multiplier_;
  int filters_;
  Activation act_;
  bool use_bias_;
};

}  // namespace ringtrain::nn
