// Argument readers shared by the convolution and pooling layers (Conv2D, DepthwiseConv2D,
// SeparableConv2D, the pooling and padding layers). Every error is an INVALID_ARGUMENT
// whose message starts with `ctx` and names the field; nothing here throws.
#pragma once

#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "nn/keras/json_fields.h"
#include "nn/layer.h"
#include "nn/layers/window.h"

namespace ringtrain::nn {

// `in` must be [H, W, C]; `type` ("depthwise_conv2d") names the layer in the message.
Status CheckImageInput(const Shape& in, const char* type, const std::string& ctx);

// Keras' dilation_rate: an int or a pair, default 1; Keras refuses strides > 1 with it.
StatusOr<std::pair<int, int>> GetDilation(const nlohmann::json& j, std::pair<int, int> strides,
                                          const std::string& ctx);

// The new layers initialise as Keras does by default (glorot_uniform kernels, zero
// biases) and have no initializer or regularizer arguments of their own yet: `key` may
// be absent, null, or Keras' default (`keras_default`, "glorot_uniform" or "zeros", as a
// name, as {"class_name": "GlorotUniform", "config": {"seed": ...}} or, as tfjs writes it, as
// VarianceScaling(scale 1, fan_avg, uniform)); anything else is
// refused, naming the key, rather than silently ignored.
Status CheckDefaultKernelInitializer(const nlohmann::json& j, const char* key, const char* keras_default,
                               const std::string& ctx);
// `key` (a regularizer) must be absent or null.
Status CheckNoRegularizer(const nlohmann::json& j, const char* key, const std::string& ctx);

// The depthwise part of DepthwiseConv2D and SeparableConv2D, as Keras reads it:
// kernel_size, strides, padding, dilation_rate, depth_multiplier, groups (1 only: tf.keras 2
// writes its Conv base class's), activation, use_bias. `class_name` names the layer in the
// groups message.
struct DepthwiseArgs {
  std::pair<int, int> kernel, strides, dilation;
  Padding padding = Padding::kValid;
  int multiplier = 1;
  Activation act = Activation::kLinear;
  bool use_bias = true;
};
StatusOr<DepthwiseArgs> GetDepthwiseArgs(const nlohmann::json& j, const char* class_name, const std::string& ctx);
// The depthwise window over `in` ([H, W, C]), after checking that C * depth_multiplier
// (the layer's `what` channels: "output", "intermediate") stays within bounds.
StatusOr<Window2D> DepthwiseWindow(const Shape& in, const DepthwiseArgs& a, const char* what, const std::string& ctx);

}  // namespace ringtrain::nn
