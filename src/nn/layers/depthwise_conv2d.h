// depthwise_conv2d: Keras DepthwiseConv2D over NHWC input. Each input channel c is
// convolved with its own depth_multiplier (m) filters: depthwise_kernel [kh, kw, c, m],
// output channel c * m + k (Keras' channel-major order), bias [c * m]. Its op is
// kDepthwiseConv2D; the CPU backend's kernel is in backends/cpu/depthwise_kernels.cc.
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

class DepthwiseConv2D final : public Layer {
 public:
  // Fields: kernel_size, strides (1), padding ("valid"), depth_multiplier (1), groups (only 1),
  // dilation_rate (1), activation, use_bias (true); depthwise_initializer and
  // bias_initializer only at Keras' defaults. `in` must be [H, W, C].
  static StatusOr<std::unique_ptr<Layer>> Create(const nlohmann::json& j, std::string name, const Shape& in,
                                                 const std::string& ctx);

  const char* type() const override { return "depthwise_conv2d"; }
  const char* class_name() const override { return "DepthwiseConv2D"; }
  std::vector<ParamSpec> ParamSpecs() const override;
  ops::Op op() const override;

 private:
  DepthwiseConv2D(std::string name, const Shape& in, const Window2D& g, int multiplier, Activation act,
                  bool use_bias);

  Window2D g_;
  int multiplier_;
  Activation act_;
  bool use_bias_;
};

}  // namespace ringtrain::nn
