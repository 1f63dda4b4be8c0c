// The op parity suite for the Activation op (tests/gpu/op_parity.h): the Activation
// layer with every Keras activation by name, ReLU with its arguments, LeakyReLU and
// Softmax (rank-1 and rank-3 inputs, rows for a warp and for a block on the GPU), each
// case on every device against the CPU layer, forward and input gradient.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gpu/op_parity.h"

namespace ringtrain::testing {
namespace {

using nlohmann::json;

// A model of one layer under test on an input of `shape`.
json One(json layer, json shape) { return {{"input_shape", shape}, {"layers", json::array({layer})}}; }

class ActivationParity : public OpParityTest {};

TEST_P(ActivationParity, EveryActivationByName) {
  SKIP_IF_DEVICE_UNAVAILABLE(GetParam());
  const char* const names[] = {"linear", "relu", "relu6", "sigmoid", "tanh", "softmax", "gelu", "gelu_new", "swish",
                               "silu", "elu", "selu", "leaky_relu", "softplus", "softsign", "mish", "exponential"};
  for (const char* name : names) {
    const json layer = {{"type", "activation"}, {"activation", name}};
    const std::vector<OpCase> cases = {
        {std::string(name) + " rank 3", One(layer, {6, 5, 7}), 3},
        // Inputs on multiples of 0.25: exact zeros, the kinks at 0 (and relu6's 6 is out of reach).
        {std::string(name) + " rank 1 on a grid", One(layer, {40}), 5, true, 0.25f},
        {std::string(name) + " inference", One(layer, {12}), 2, false},
    };
    for (const OpCase& c : cases) CheckOp(GetParam(), c);
  }
}

TEST_P(ActivationParity, ReLUArguments) {
  SKIP_IF_DEVICE_UNAVAILABLE(GetParam());
  const std::vector<json> args = {
      json::object(),
      {{"max_value", 0.5}},
      {{"max_value", 0}},
      {{"negative_slope", 0.1}},  // the leaky backward path
      {{"threshold", 0.25}},
      {{"negative_slope", 0.2}, {"threshold", 0.5}},
      {{"max_value", 0.75}, {"negative_slope", 0.3}},
      {{"max_value", 0.5}, {"negative_slope", 0.1}, {"threshold", 0.25}},
      {{"max_value", 0.25}, {"negative_slope", 0.5}, {"threshold", 0.5}},  // threshold above the cap
  };
  for (const json& a : args) {
    json layer = a;
    layer["type"] = "re_lu";
    const std::string label = "ReLU " + a.dump();
    const std::vector<OpCase> cases = {
        {label, One(layer, {5, 4, 3}), 4},
        // Inputs on multiples of 0.25: exactly at 0, the thresholds and the caps.
        {label + " on a grid", One(layer, {64}), 3, true, 0.25f},
    };
    for (const OpCase& c : cases) CheckOp(GetParam(), c);
  }
}

TEST_P(ActivationParity, LeakyReLU) {
  SKIP_IF_DEVICE_UNAVAILABLE(GetParam());
  const std::vector<json> args = {json::object(), {{"negative_slope", 0.05}}, {{"alpha", 0.1}}, {{"negative_slope", 0}},
                                  {{"negative_slope", 2.5}}};
  for (const json& a : args) {
    json layer = a;
    layer["type"] = "leaky_re_lu";
    const std::string label = "LeakyReLU " + a.dump();
    const std::vector<OpCase> cases = {
        {label, One(layer, {7, 3}), 4},
        {label + " on a grid", One(layer, {33}), 3, true, 0.25f},
    };
    for (const OpCase& c : cases) CheckOp(GetParam(), c);
  }
}

TEST_P(ActivationParity, Softmax) {
  SKIP_IF_DEVICE_UNAVAILABLE(GetParam());
  const json softmax = {{"type", "softmax"}};
  const std::vector<OpCase> cases = {
      {"rank 1, 10 classes", One(softmax, {10}), 8},
      {"rank 1, one unit", One(softmax, {1}), 3},
      {"rank 1, 32 units (a whole warp)", One(softmax, {32}), 4},
      {"rank 1, 1,024 units (the longest warp row)", One(softmax, {1024}), 3},
      {"rank 1, 1,500 units (block rows)", One(softmax, {1500}), 3},
      {"rank 3, last axis 7", One(softmax, {4, 5, 7}), 3},
      {"rank 3, last axis 33", One(softmax, {2, 3, 33}), 2},
      {"rank 3, last axis 2,000 (block rows)", One(softmax, {2, 1, 2000}), 2},
      {"axis -1 given", One({{"type", "softmax"}, {"axis", -1}}, {3, 6}), 4},
      {"ties on a grid", One(softmax, {2, 9}), 4, true, 0.5f},
      {"inference", One(softmax, {5, 11}), 2, false},
      {"activation softmax, rank 3", One({{"type", "activation"}, {"activation", "softmax"}}, {3, 4, 9}), 3},
  };
  for (const OpCase& c : cases) CheckOp(GetParam(), c);
}

RT_OP_PARITY_ON_EVERY_DEVICE(ActivationParity);

}  // namespace
}  // namespace ringtrain::testing
