// The op parity suite for the pooling, padding, rescaling and merge ops (tests/gpu/op_parity.h):
// AvgPool2D, GlobalMaxPool2D, GlobalAvgPool2D, ZeroPadding2D, Rescaling, Concatenate,
// Multiply and Add of several inputs, each case on every device against the CPU layer.
// The merge ops take the model input several times ("inputs": ["input", "input"]).
#include <vector>

#include <nlohmann/json.hpp>

#include "gpu/op_parity.h"

namespace ringtrain::testing {
namespace {

using nlohmann::json;

// A model of one layer under test on an input of `shape`.
json One(json layer, json shape) { return {{"input_shape", shape}, {"layers", json::array({layer})}}; }

json AvgPool(json pool, json strides, const char* padding) {
  return {{"type", "average_pooling2d"}, {"pool_size", pool}, {"strides", strides}, {"padding", padding}};
}

// A merge layer of `type` over the model input taken `n` times.
json Merge(const char* type, int n, json extra = json::object()) {
  json layer = {{"type", type}, {"inputs", std::vector<std::string>(n, "input")}};
  layer.update(extra);
  return layer;
}

class ShapeParity : public OpParityTest {};

TEST_P(ShapeParity, AvgPool2D) {
  SKIP_IF_DEVICE_UNAVAILABLE(GetParam());
  const std::vector<OpCase> cases = {
      {"valid 2x2", One({{"type", "average_pooling2d"}}, {8, 8, 3})},
      {"valid 2x2 odd input", One({{"type", "average_pooling2d"}}, {7, 9, 2})},
      {"same 3x3 s2 (clipped windows)", One(AvgPool(3, 2, "same"), {7, 8, 3})},
      {"same 2x2 s1", One(AvgPool(2, 1, "same"), {5, 6, 4})},
      {"same 3x2 s(2,3)", One(AvgPool({3, 2}, {2, 3}, "same"), {10, 11, 2})},
      {"same 4x4 s1 (pad before and after)", One(AvgPool(4, 1, "same"), {6, 7, 3}), 3},
      {"overlapping 3x3 s1", One(AvgPool(3, 1, "valid"), {6, 6, 4})},
      {"stride larger than the window", One(AvgPool(2, 3, "valid"), {11, 8, 2})},
      {"same 3x3 s2 batch 9 c16", One(AvgPool(3, 2, "same"), {14, 14, 16}), 9},
      {"inference", One(AvgPool(3, 2, "same"), {7, 8, 3}), 4, false},
  };
  for (const OpCase& c : cases) CheckOp(GetParam(), c);
}

TEST_P(ShapeParity, GlobalPool2D) {
  SKIP_IF_DEVICE_UNAVAILABLE(GetParam());
  const std::vector<OpCase> cases = {
      {"max", One({{"type", "global_max_pooling2d"}}, {5, 6, 7})},
      {"max keepdims", One({{"type", "global_max_pooling2d"}, {"keepdims", true}}, {4, 4, 3})},
      {"max ties", One({{"type", "global_max_pooling2d"}}, {6, 6, 3}), 4, true, 0.5f},
      {"max keepdims ties one pixel", One({{"type", "global_max_pooling2d"}, {"keepdims", true}}, {1, 1, 5}), 4, true,
       0.5f},
      {"max inference", One({{"type", "global_max_pooling2d"}}, {5, 6, 7}), 4, false},
      {"average", One({{"type", "global_average_pooling2d"}}, {5, 6, 7})},
      {"average keepdims", One({{"type", "global_average_pooling2d"}, {"keepdims", true}}, {7, 3, 2})},
      {"average 28x28 batch 9", One({{"type", "global_average_pooling2d"}}, {28, 28, 8}), 9},
  };
  for (const OpCase& c : cases) CheckOp(GetParam(), c);
}

TEST_P(ShapeParity, ZeroPadding2D) {
  SKIP_IF_DEVICE_UNAVAILABLE(GetParam());
  const std::vector<OpCase> cases = {
      {"default 1", One({{"type", "zero_padding2d"}}, {4, 5, 3})},
      {"symmetric (2, 1)", One({{"type", "zero_padding2d"}, {"padding", {2, 1}}}, {3, 3, 2})},
      {"asymmetric ((1, 2), (3, 0))", One({{"type", "zero_padding2d"}, {"padding", {{1, 2}, {3, 0}}}}, {4, 5, 3})},
      {"asymmetric ((0, 3), (0, 1))", One({{"type", "zero_padding2d"}, {"padding", {{0, 3}, {0, 1}}}}, {2, 6, 1})},
  };
  for (const OpCase& c : cases) CheckOp(GetParam(), c);
}

TEST_P(ShapeParity, Rescaling) {
  SKIP_IF_DEVICE_UNAVAILABLE(GetParam());
  const std::vector<OpCase> cases = {
      {"1/255", One({{"type", "rescaling"}, {"scale", 0.00392156862745098}}, {4, 5, 3})},
      {"scale and offset", One({{"type", "rescaling"}, {"scale", 2.0}, {"offset", -1.0}}, {6, 2})},
      {"per channel",
       One({{"type", "rescaling"}, {"scale", {0.5, -1.25, 3.0}}, {"offset", {0.1, 0.0, -7.5}}}, {4, 5, 3})},
      {"per channel on vectors",
       One({{"type", "rescaling"}, {"scale", {1.0, 2.0, 3.0, 4.0, 5.0}}, {"offset", {-1.0, -2.0, 0.0, 2.0, 1.0}}},
           {5})},
  };
  for (const OpCase& c : cases) CheckOp(GetParam(), c);
}

TEST_P(ShapeParity, Concatenate) {
  SKIP_IF_DEVICE_UNAVAILABLE(GetParam());
  const std::vector<OpCase> cases = {
      {"channels of two", One(Merge("concatenate", 2), {4, 5, 3})},
      {"channels of three", One(Merge("concatenate", 3), {4, 5, 3})},
      {"axis 1 of two", One(Merge("concatenate", 2, {{"axis", 1}}), {4, 5, 3})},
      {"axis 1 of three", One(Merge("concatenate", 3, {{"axis", 1}}), {4, 5, 3})},
      {"axis 2 of three", One(Merge("concatenate", 3, {{"axis", 2}}), {3, 4, 2})},
      {"axis -2 of two", One(Merge("concatenate", 2, {{"axis", -2}}), {3, 4, 2})},
      {"vectors of three", One(Merge("concatenate", 3), {7})},
  };
  for (const OpCase& c : cases) CheckOp(GetParam(), c);
}

TEST_P(ShapeParity, Multiply) {
  SKIP_IF_DEVICE_UNAVAILABLE(GetParam());
  const std::vector<OpCase> cases = {
      {"of two", One(Merge("multiply", 2), {5, 4, 3})},
      {"of three", One(Merge("multiply", 3), {5, 4, 3})},
      {"of three vectors", One(Merge("multiply", 3), {17})},
      // Ten inputs: the GPU's product runs as two launches (eight arrays each at most).
      {"of ten", One(Merge("multiply", 10), {4, 3})},
  };
  for (const OpCase& c : cases) CheckOp(GetParam(), c);
}

TEST_P(ShapeParity, AddOfMany) {
  SKIP_IF_DEVICE_UNAVAILABLE(GetParam());
  const std::vector<OpCase> cases = {
      {"of three", One(Merge("add", 3), {5, 4, 3})},
      {"of four vectors", One(Merge("add", 4), {33})},
      {"of ten (two launches)", One(Merge("add", 10), {4, 3, 2})},
  };
  for (const OpCase& c : cases) CheckOp(GetParam(), c);
}

RT_OP_PARITY_ON_EVERY_DEVICE(ShapeParity);

}  // namespace
}  // namespace ringtrain::testing
