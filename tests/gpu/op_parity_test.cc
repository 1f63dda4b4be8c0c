// The op parity suite for the convolution, dense and max-pooling ops (tests/gpu/op_parity.h):
// each case on every device, against the CPU kernel.
#include <vector>

#include <nlohmann/json.hpp>

#include "gpu/op_parity.h"

namespace ringtrain::testing {
namespace {

using nlohmann::json;

// A model of one layer under test on an input of `shape`.
json One(json layer, json shape) { return {{"input_shape", shape}, {"layers", json::array({layer})}}; }

json Conv(int filters, json kernel, json strides, const char* padding, const char* activation, bool use_bias) {
  return {{"type", "conv2d"}, {"filters", filters}, {"kernel_size", kernel}, {"strides", strides},
          {"padding", padding}, {"activation", activation}, {"use_bias", use_bias}};
}

class ConvDensePoolParity : public OpParityTest {};

TEST_P(ConvDensePoolParity, Conv2D) {
  SKIP_IF_DEVICE_UNAVAILABLE(GetParam());
  const std::vector<OpCase> cases = {
      {"valid s1 relu bias c1", One(Conv(8, 3, 1, "valid", "relu", true), {12, 12, 1})},
      {"valid s1 linear no-bias c3", One(Conv(5, 3, 1, "valid", "linear", false), {9, 10, 3})},
      {"valid s2 relu c3", One(Conv(6, 3, 2, "valid", "relu", true), {9, 9, 3})},
      {"valid s2 uneven c4", One(Conv(4, {3, 2}, {2, 3}, "valid", "linear", true), {10, 11, 4})},
      {"same s1 k3 relu c2 (symmetric)", One(Conv(7, 3, 1, "same", "relu", true), {8, 8, 2})},
      {"same s2 k3 linear c3 (odd pad total)", One(Conv(5, 3, 2, "same", "linear", true), {8, 8, 3})},
      {"same s1 k4 relu c3 (even kernel)", One(Conv(4, 4, 1, "same", "relu", true), {7, 9, 3})},
      {"same s2 k5x3 no-bias c2", One(Conv(3, {5, 3}, {2, 1}, "same", "linear", false), {7, 6, 2})},
      {"valid s1 relu c16 batch 9", One(Conv(32, 3, 1, "valid", "relu", true), {10, 10, 16}), 9},
      // 8 x 26 x 26 = 5,408 rows per filter: the bias gradient's two-pass path (43 chunks, the last short).
      {"valid s1 relu c1 long columns", One(Conv(8, 3, 1, "valid", "relu", true), {28, 28, 1}), 8},
  };
  for (const OpCase& c : cases) CheckOp(GetParam(), c);
}

TEST_P(ConvDensePoolParity, Dense) {
  SKIP_IF_DEVICE_UNAVAILABLE(GetParam());
  const std::vector<OpCase> cases = {
      {"relu bias", One({{"type", "dense"}, {"units", 17}, {"activation", "relu"}}, {33}), 5},
      {"linear no-bias", One({{"type", "dense"}, {"units", 10}, {"use_bias", false}}, {64}), 7},
      {"wide", One({{"type", "dense"}, {"units", 64}, {"activation", "relu"}}, {845}), 16},
      {"batch 4,100 (two-pass bias)", One({{"type", "dense"}, {"units", 5}, {"activation", "relu"}}, {3}), 4100},
  };
  for (const OpCase& c : cases) CheckOp(GetParam(), c);
}

TEST_P(ConvDensePoolParity, MaxPool2D) {
  SKIP_IF_DEVICE_UNAVAILABLE(GetParam());
  const std::vector<OpCase> cases = {
      {"valid 2x2", One({{"type", "max_pooling2d"}}, {8, 8, 3})},
      {"valid 2x2 odd input", One({{"type", "max_pooling2d"}}, {7, 9, 2})},
      {"same 3x3 s2", One({{"type", "max_pooling2d"}, {"pool_size", 3}, {"strides", 2}, {"padding", "same"}}, {7, 8, 3})},
      {"overlapping 3x3 s1", One({{"type", "max_pooling2d"}, {"pool_size", 3}, {"strides", 1}}, {6, 6, 4})},
      {"overlapping ties", One({{"type", "max_pooling2d"}, {"pool_size", 3}, {"strides", 2}}, {9, 9, 2}), 3, true, 0.5f},
      {"same 2x2 ties", One({{"type", "max_pooling2d"}, {"padding", "same"}}, {5, 5, 3}), 4, true, 0.5f},
  };
  for (const OpCase& c : cases) CheckOp(GetParam(), c);
}

TEST_P(ConvDensePoolParity, AddOfTwoAndViews) {
  SKIP_IF_DEVICE_UNAVAILABLE(GetParam());
  const std::vector<OpCase> cases = {
      {"add of two", One({{"type", "add"}, {"inputs", {"input", "input"}}}, {5, 4, 3})},
      {"flatten", One({{"type", "flatten"}}, {5, 4, 3})},
      {"reshape", One({{"type", "reshape"}, {"target_shape", {12, 5}}}, {5, 4, 3})},
  };
  for (const OpCase& c : cases) CheckOp(GetParam(), c);
}

RT_OP_PARITY_ON_EVERY_DEVICE(ConvDensePoolParity);

}  // namespace
}  // namespace ringtrain::testing
