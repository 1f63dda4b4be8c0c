// The op parity suite (tests/gpu/op_parity.h) for Subtract, Average, Maximum and Minimum:
// each case on every device against the CPU kernel. The harness feeds the model input to
// every input of the op, so the extremes here are all ties (the gradient goes to input 0);
// tests/gpu/merge_math_test.cc checks distinct inputs and long chains on the host.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gpu/op_parity.h"

namespace ringtrain::testing {
namespace {

using nlohmann::json;

json One(json layer, json shape) { return {{"input_shape", shape}, {"layers", json::array({layer})}}; }

json Merge(const char* type, int n) { return {{"type", type}, {"inputs", std::vector<std::string>(n, "input")}}; }

class MoreLayersParity : public OpParityTest {};

TEST_P(MoreLayersParity, ElementwiseMerges) {
  SKIP_IF_DEVICE_UNAVAILABLE(GetParam());
  const std::vector<OpCase> cases = {
      {"subtract", One(Merge("subtract", 2), {5, 4, 3})},
      {"average of two", One(Merge("average", 2), {5, 4, 3})},
      {"average of three vectors", One(Merge("average", 3), {17})},
      {"average of eleven", One(Merge("average", 11), {6})},
      {"maximum of three", One(Merge("maximum", 3), {5, 4, 3})},
      {"maximum of ten (two launches)", One(Merge("maximum", 10), {7})},
      {"minimum of two", One(Merge("minimum", 2), {4, 4, 2})},
      {"minimum of nine", One(Merge("minimum", 9), {9})},
      {"maximum inference", One(Merge("maximum", 3), {5, 4, 3}), 4, false},
  };
  for (const OpCase& c : cases) CheckOp(GetParam(), c);
}

TEST_P(MoreLayersParity, Normalization) {
  SKIP_IF_DEVICE_UNAVAILABLE(GetParam());
  // Without mean and variance the weights hold them (random here, the variances positive).
  const std::vector<OpCase> cases = {
      {"weights, channels", One({{"type", "normalization"}}, {5, 4, 3})},
      {"weights, inverted", One({{"type", "normalization"}, {"invert", true}}, {5, 4, 3})},
      {"weights, axis 1 (index table)", One({{"type", "normalization"}, {"axis", 1}}, {5, 4, 3})},
      {"weights, axis null", One({{"type", "normalization"}, {"axis", nullptr}}, {6, 2})},
      {"config values, a zero variance",
       One({{"type", "normalization"}, {"mean", {0.5, -1.0, 0.0}}, {"variance", {2.0, 0.0, 0.25}}}, {4, 4, 3})},
      {"config values, axes [1, 3], inverted",
       One({{"type", "normalization"}, {"axis", {1, 3}}, {"mean", 0.5}, {"variance", 3.0}, {"invert", true}},
           {4, 3, 2})},
      {"inference", One({{"type", "normalization"}}, {5, 4, 3}), 4, false},
  };
  for (const OpCase& c : cases) CheckOp(GetParam(), c);
}

TEST_P(MoreLayersParity, NoiseLayers) {
  SKIP_IF_DEVICE_UNAVAILABLE(GetParam());
  // The draws are functions of the step (OpCase::train_step) and the layer: both devices
  // drop the same channels and add the same noise.
  const std::vector<OpCase> cases = {
      {"spatial dropout", One({{"type", "spatial_dropout2d"}, {"rate", 0.4}}, {5, 4, 8})},
      {"spatial dropout, seeded, step 11", One({{"type", "spatial_dropout2d"}, {"rate", 0.25}, {"seed", 3}}, {3, 3, 5}),
       6, true, 0, 11},
      {"spatial dropout inference", One({{"type", "spatial_dropout2d"}, {"rate", 0.4}}, {5, 4, 8}), 4, false},
      {"gaussian noise", One({{"type", "gaussian_noise"}, {"stddev", 0.5}}, {5, 4, 3})},
      {"gaussian noise, odd count, step 9", One({{"type", "gaussian_noise"}, {"stddev", 1.0}, {"seed", 2}}, {7}), 3,
       true, 0, 9},
      {"gaussian noise inference", One({{"type", "gaussian_noise"}, {"stddev", 0.5}}, {5, 4, 3}), 4, false},
  };
  for (const OpCase& c : cases) CheckOp(GetParam(), c);
}

TEST_P(MoreLayersParity, ImageAdjust) {
  SKIP_IF_DEVICE_UNAVAILABLE(GetParam());
  // Inputs in [-1, 1]: value ranges that clip some of them.
  const std::vector<OpCase> cases = {
      {"brightness", One({{"type", "random_brightness"}, {"factor", 0.4}, {"value_range", {-1, 1}}}, {6, 5, 3})},
      {"brightness, seeded, step 8",
       One({{"type", "random_brightness"}, {"factor", {-0.2, 0.5}}, {"value_range", {0, 1}}, {"seed", 4}}, {4, 4, 2}),
       5, true, 0, 8},
      {"contrast", One({{"type", "random_contrast"}, {"factor", 0.5}, {"value_range", {-1, 1}}}, {6, 5, 3})},
      {"contrast [0.3, 0.8]",
       One({{"type", "random_contrast"}, {"factor", {0.3, 0.8}}, {"value_range", {-0.5, 0.5}}}, {7, 3, 4}), 3},
      {"contrast inference", One({{"type", "random_contrast"}, {"factor", 0.5}}, {6, 5, 3}), 4, false},
  };
  for (const OpCase& c : cases) CheckOp(GetParam(), c);
}

TEST_P(MoreLayersParity, RandomZoom) {
  SKIP_IF_DEVICE_UNAVAILABLE(GetParam());
  const std::vector<OpCase> cases = {
      {"zoom", One({{"type", "random_zoom"}, {"height_factor", 0.4}}, {8, 7, 3})},
      {"zoom, width apart, constant fill",
       One({{"type", "random_zoom"}, {"height_factor", {-0.3, 0.2}}, {"width_factor", 0.5}, {"fill_mode", "constant"},
            {"fill_value", 0.25}},
           {6, 9, 2}),
       3, true, 0, 12},
      {"zoom, nearest, wrap", One({{"type", "random_zoom"}, {"height_factor", 0.5}, {"interpolation", "nearest"},
                                   {"fill_mode", "wrap"}, {"seed", 7}},
                                  {5, 5, 4})},
      {"zoom inference", One({{"type", "random_zoom"}, {"height_factor", 0.4}}, {8, 7, 3}), 4, false},
  };
  for (const OpCase& c : cases) CheckOp(GetParam(), c);
}

RT_OP_PARITY_ON_EVERY_DEVICE(MoreLayersParity);

}  // namespace
}  // namespace ringtrain::testing
