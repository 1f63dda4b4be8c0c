// The op parity suite for the convolution family and Dense's output activations
// (tests/gpu/op_parity.h): grouped and dilated Conv2D, Conv2D and Dense with activations
// other than relu and linear, DepthwiseConv2D and SeparableConv2D; each case on every
// device, against the CPU layer.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gpu/op_parity.h"

namespace ringtrain::testing {
namespace {

using nlohmann::json;

// A model of one layer under test on an input of `shape`.
json One(json layer, json shape) { return {{"input_shape", shape}, {"layers", json::array({layer})}}; }

json Conv(int filters, json kernel, json strides, const char* padding, const char* activation, bool use_bias,
          int groups = 1, json dilation = 1) {
  return {{"type", "conv2d"},     {"filters", filters}, {"kernel_size", kernel},
          {"strides", strides},   {"padding", padding}, {"activation", activation},
          {"use_bias", use_bias}, {"groups", groups},   {"dilation_rate", dilation}};
}

json Depthwise(json kernel, json strides, const char* padding, int multiplier, const char* activation, bool use_bias,
               json dilation = 1) {
  return {{"type", "depthwise_conv2d"}, {"kernel_size", kernel},          {"strides", strides},
          {"padding", padding},         {"depth_multiplier", multiplier}, {"activation", activation},
          {"use_bias", use_bias},       {"dilation_rate", dilation}};
}

json Separable(int filters, json kernel, json strides, const char* padding, int multiplier, const char* activation,
               bool use_bias, json dilation = 1) {
  json j = Depthwise(kernel, strides, padding, multiplier, activation, use_bias, dilation);
  j["type"] = "separable_conv2d";
  j["filters"] = filters;
  return j;
}

json Dense(int units, const char* activation, bool use_bias = true) {
  return {{"type", "dense"}, {"units", units}, {"activation", activation}, {"use_bias", use_bias}};
}

class ConvFamilyParity : public OpParityTest {};

TEST_P(ConvFamilyParity, Conv2DGrouped) {
  SKIP_IF_DEVICE_UNAVAILABLE(GetParam());
  const std::vector<OpCase> cases = {
      {"groups 2 valid relu", One(Conv(8, 3, 1, "valid", "relu", true, 2), {9, 9, 4})},
      {"groups 3 valid linear no-bias", One(Conv(6, {3, 2}, 1, "valid", "linear", false, 3), {8, 7, 9})},
      {"groups 4 same s2 (odd pad total)", One(Conv(8, 3, 2, "same", "linear", true, 4), {8, 8, 8})},
      {"groups 2 same s1 k4 relu", One(Conv(4, 4, 1, "same", "relu", true, 2), {7, 9, 6})},
      {"groups = channels (depthwise-like) x2", One(Conv(12, 3, 1, "same", "relu", true, 6), {6, 7, 6})},
      {"groups 2 uneven strides", One(Conv(6, {3, 2}, {2, 3}, "valid", "linear", true, 2), {10, 11, 4})},
      // 8 x 26 x 26 rows per filter: the bias gradient in chunks.
      {"groups 2 long columns", One(Conv(4, 3, 1, "valid", "relu", true, 2), {28, 28, 2}), 8},
  };
  for (const OpCase& c : cases) CheckOp(GetParam(), c);
}

TEST_P(ConvFamilyParity, Conv2DDilated) {
  SKIP_IF_DEVICE_UNAVAILABLE(GetParam());
  const std::vector<OpCase> cases = {
      {"dilation 2 valid relu", One(Conv(5, 3, 1, "valid", "relu", true, 1, 2), {11, 11, 3})},
      {"dilation (2, 3) valid linear", One(Conv(4, 3, 1, "valid", "linear", true, 1, {2, 3}), {10, 12, 2})},
      {"dilation 2 same relu (symmetric)", One(Conv(6, 3, 1, "same", "relu", true, 1, 2), {9, 8, 3})},
      {"dilation 3 same k2 (odd pad total)", One(Conv(5, 2, 1, "same", "linear", true, 1, 3), {8, 9, 3})},
      {"dilation (1, 3) same k4x2 no-bias", One(Conv(3, {4, 2}, 1, "same", "relu", false, 1, {1, 3}), {7, 8, 2})},
      {"dilation 2 groups 2 same", One(Conv(6, 3, 1, "same", "relu", true, 2, 2), {9, 9, 4})},
      {"dilation 2 groups 3 valid", One(Conv(3, 2, 1, "valid", "linear", true, 3, 2), {8, 8, 6})},
  };
  for (const OpCase& c : cases) CheckOp(GetParam(), c);
}

TEST_P(ConvFamilyParity, Conv2DActivations) {
  SKIP_IF_DEVICE_UNAVAILABLE(GetParam());
  std::vector<OpCase> cases;
  for (const char* act : {"tanh", "sigmoid", "gelu", "gelu_new", "softmax", "swish", "relu6", "elu", "selu",
                          "leaky_relu", "softplus", "softsign", "mish", "exponential"}) {
    cases.push_back({std::string(act) + " valid", One(Conv(5, 3, 1, "valid", act, true), {7, 8, 3})});
  }
  cases.push_back({"tanh same s2 no-bias (odd pad total)", One(Conv(4, 3, 2, "same", "tanh", false), {8, 8, 3})});
  cases.push_back({"gelu groups 2", One(Conv(6, 3, 1, "same", "gelu", true, 2), {7, 7, 4})});
  cases.push_back({"softmax dilation 2", One(Conv(5, 3, 1, "valid", "softmax", true, 1, 2), {9, 9, 3})});
  cases.push_back({"sigmoid long columns", One(Conv(4, 3, 1, "valid", "sigmoid", true), {28, 28, 1}), 8});
  for (const OpCase& c : cases) CheckOp(GetParam(), c);
}

TEST_P(ConvFamilyParity, DenseActivations) {
  SKIP_IF_DEVICE_UNAVAILABLE(GetParam());
  std::vector<OpCase> cases;
  for (const char* act : {"tanh", "gelu", "sigmoid", "softmax", "swish", "gelu_new", "elu", "softplus"}) {
    cases.push_back({act, One(Dense(17, act), {33}), 5});
  }
  cases.push_back({"tanh no-bias", One(Dense(10, "tanh", false), {64}), 7});
  cases.push_back({"gelu wide", One(Dense(64, "gelu"), {845}), 16});
  cases.push_back({"softmax batch 4,100 (two-pass bias)", One(Dense(5, "softmax"), {3}), 4100});
  for (const OpCase& c : cases) CheckOp(GetParam(), c);
}

// The CPU's DepthwiseConv2D and SeparableConv2D run relu and linear only (the other
// activations are in Activation layers or DepthwiseConv2DActivations below).
TEST_P(ConvFamilyParity, DepthwiseConv2D) {
  SKIP_IF_DEVICE_UNAVAILABLE(GetParam());
  const std::vector<OpCase> cases = {
      {"m1 valid relu", One(Depthwise(3, 1, "valid", 1, "relu", true), {8, 9, 5})},
      {"m2 valid linear no-bias", One(Depthwise({3, 2}, 1, "valid", 2, "linear", false), {7, 8, 3})},
      {"m1 same s1", One(Depthwise(3, 1, "same", 1, "relu", true), {7, 7, 4})},
      {"m2 same s2 (odd pad total)", One(Depthwise(3, 2, "same", 2, "relu", true), {8, 8, 3})},
      {"m1 same s2 k4", One(Depthwise(4, 2, "same", 1, "linear", true), {9, 8, 6})},
      {"m3 valid uneven strides", One(Depthwise({3, 2}, {2, 3}, "valid", 3, "relu", true), {10, 11, 2})},
      {"m1 dilation 2 same", One(Depthwise(3, 1, "same", 1, "relu", true, 2), {9, 9, 4})},
      {"m2 dilation (2, 3) valid", One(Depthwise(3, 1, "valid", 2, "linear", true, {2, 3}), {10, 12, 3})},
      {"m1 batch 9 c16", One(Depthwise(3, 1, "same", 1, "relu", true), {10, 10, 16}), 9},
      // 8 x 28 x 28 = 6,272 output pixels: the filter and bias gradients in chunks.
      {"m2 long columns", One(Depthwise(3, 1, "same", 2, "relu", true), {28, 28, 2}), 8},
  };
  for (const OpCase& c : cases) CheckOp(GetParam(), c);
}

TEST_P(ConvFamilyParity, SeparableConv2D) {
  SKIP_IF_DEVICE_UNAVAILABLE(GetParam());
  const std::vector<OpCase> cases = {
      {"m1 valid relu", One(Separable(6, 3, 1, "valid", 1, "relu", true), {8, 9, 4})},
      {"m2 valid linear no-bias", One(Separable(5, {3, 2}, 1, "valid", 2, "linear", false), {7, 8, 3})},
      {"m1 same s2 (odd pad total)", One(Separable(8, 3, 2, "same", 1, "relu", true), {8, 8, 3})},
      {"m2 same s1 k4", One(Separable(4, 4, 1, "same", 2, "linear", true), {7, 9, 2})},
      {"m1 dilation 2 same", One(Separable(5, 3, 1, "same", 1, "relu", true, 2), {9, 9, 3})},
      {"m3 uneven strides", One(Separable(7, {3, 2}, {2, 3}, "valid", 3, "relu", true), {10, 11, 2})},
      {"m2 long columns", One(Separable(4, 3, 1, "same", 2, "relu", true), {28, 28, 2}), 8},
  };
  for (const OpCase& c : cases) CheckOp(GetParam(), c);
}

// Keras' DepthwiseConv2D and SeparableConv2D apply any activation after the bias.
TEST_P(ConvFamilyParity, DepthwiseAndSeparableActivations) {
  SKIP_IF_DEVICE_UNAVAILABLE(GetParam());
  const std::vector<OpCase> cases = {
      {"depthwise tanh", One(Depthwise(3, 1, "valid", 1, "tanh", true), {8, 9, 5})},
      {"depthwise m2 gelu same s2", One(Depthwise(3, 2, "same", 2, "gelu", true), {8, 8, 3})},
      {"depthwise m2 softmax", One(Depthwise(3, 1, "same", 2, "softmax", true), {7, 7, 3})},
      {"separable sigmoid", One(Separable(6, 3, 1, "valid", 1, "sigmoid", true), {8, 9, 4})},
      {"separable m2 swish no-bias", One(Separable(5, 3, 2, "same", 2, "swish", false), {8, 8, 3})},
  };
  for (const OpCase& c : cases) CheckOp(GetParam(), c);
}

RT_OP_PARITY_ON_EVERY_DEVICE(ConvFamilyParity);

}  // namespace
}  // namespace ringtrain::testing
