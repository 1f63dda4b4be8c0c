// The activations, the activation layers, Rescaling and the merge layers against
// TensorFlow.js (tests/oracle): tfjs builds the Keras model ("build"), ringtrain loads
// that very model JSON (KerasJsonToCompact + Model::FromJson), both get the same random
// weights, and the forward output and every weight gradient agree within AllClose
// (relative 1e-4). Each model starts with a layer that has weights, so the input
// gradient of every later layer is checked through those weight gradients. Skips, with
// the reason, where the oracle is not installed.
#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "nn/keras/keras_json.h"
#include "nn/model.h"
#include "test_util.h"
#include "testing/tfjs_oracle.h"

namespace ringtrain::nn {
namespace {

using nlohmann::json;
using ::ringtrain::testing::AllClose;
using ::ringtrain::testing::RunTfjs;
using ::ringtrain::testing::TfjsTensor;
using ::ringtrain::testing::TfjsValues;

std::vector<int64_t> WithBatch(int64_t batch, const std::vector<int64_t>& shape) {
  std::vector<int64_t> s{batch};
  s.insert(s.end(), shape.begin(), shape.end());
  return s;
}

int64_t Elements(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

// Builds `layers` ({"class_name", "config", "inputs"?}) in tfjs, loads its Keras JSON
// into ringtrain, and compares a training forward and backward pass. Returns the
// model's output values (tfjs') so a caller can check the case exercised what it meant.
std::vector<float> CheckAgainstTfjs(const std::vector<int64_t>& input, const json& layers, bool sequential,
                                    uint64_t seed, float weight_scale = 0.5f) {
  auto built = RunTfjs({{"kind", "build"},
                        {"inputs", {{{"name", "input"}, {"shape", input}}}},
                        {"layers", layers},
                        {"sequential", sequential}});
  EXPECT_TRUE(built.ok()) << built.status().ToString();
  if (!built.ok()) return {};
  auto compact = KerasJsonToCompact((*built)["model_json"]);
  EXPECT_TRUE(compact.ok()) << compact.status().ToString();
  if (!compact.ok()) return {};
  auto m = Model::FromJson(*compact, 1);
  EXPECT_TRUE(m.ok()) << m.status().ToString() << "\n" << compact->dump();
  if (!m.ok()) return {};
  Model& model = **m;

  // Same weight names and shapes on both sides; then the same random values.
  const json& init = (*built)["weights"];
  EXPECT_EQ(init.size(), model.param_infos().size()) << init.dump();
  json weights = json::object();
  for (const ParamInfo& p : model.param_infos()) {
    EXPECT_TRUE(init.contains(p.name)) << p.name;
    if (init.contains(p.name)) {
      EXPECT_EQ(init[p.name]["shape"], json(p.shape)) << p.name;
    }
    std::vector<float> w = testing::RandomVector(p.count, seed++, weight_scale);
    std::copy(w.begin(), w.end(), model.params() + p.offset);
    weights[p.name] = TfjsTensor(p.shape, w);
  }
  const int batch = 3;
  const int64_t classes = model.num_classes();
  const std::vector<float> x = testing::RandomVector(batch * Elements(input), seed + 100);
  const std::vector<float> dy = testing::RandomVector(batch * classes, seed + 101);
  auto r = RunTfjs({{"kind", "model"},
                    {"model", (*built)["model_json"]},
                    {"weights", weights},
                    {"inputs", {TfjsTensor(WithBatch(batch, input), x)}},
                    {"training", true},
                    {"dy", TfjsTensor({batch, classes}, dy)}});
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  if (!r.ok()) return {};
  const std::vector<float> want = TfjsValues((*r)["outputs"][0], {batch, classes});
  const float* out = model.Forward(x.data(), batch, /*training=*/true);
  EXPECT_TRUE(AllClose(std::vector<float>(out, out + want.size()), want)) << "forward output";
  model.Backward(dy.data());
  for (const ParamInfo& p : model.param_infos()) {
    const json& g = (*r)["weight_grads"];
    EXPECT_TRUE(g.contains(p.name)) << "tfjs gave no gradient for " << p.name;
    if (!g.contains(p.name)) continue;
    EXPECT_TRUE(AllClose(std::vector<float>(model.grads() + p.offset, model.grads() + p.offset + p.count),
                         TfjsValues(g[p.name], p.shape)))
        << "gradient of " << p.name;
  }
  return want;
}

json L(const char* cls, json config, std::vector<std::string> inputs = {}) {
  json l = {{"class_name", cls}, {"config", std::move(config)}};
  if (!inputs.empty()) l["inputs"] = inputs;
  return l;
}

// tfjs 4.22's activation names (its Activation registry), less hardSigmoid and logSoftmax
// (Keras spells them differently or has none) and gelu_new, which tfjs cannot load from
// JSON (it looks up "geluNew"); layers_core_test checks gelu_new, leaky_relu, silu and
// exponential against Keras' formulas.
const char* const kTfjsActivations[] = {"linear", "relu", "relu6", "sigmoid",  "tanh",     "softmax", "gelu",
                                        "swish",  "elu",  "selu",  "softplus", "softsign", "mish"};

TEST(LayersCoreTfjsTest, DenseActivations) {
  RT_REQUIRE_TFJS();
  uint64_t seed = 1000;
  for (const char* act : kTfjsActivations) {
    SCOPED_TRACE(act);
    // Dense(6, act) -> Dense(3): the second layer's kernel gradient checks the first's output.
    CheckAgainstTfjs({5}, {L("Dense", {{"name", "dense"}, {"units", 6}, {"activation", act}}),
                           L("Dense", {{"name", "dense_1"}, {"units", 3}})},
                     true, seed += 10, 0.8f);
  }
}

TEST(LayersCoreTfjsTest, Conv2DActivations) {
  RT_REQUIRE_TFJS();
  uint64_t seed = 2000;
  for (const char* act : kTfjsActivations) {
    SCOPED_TRACE(act);
    CheckAgainstTfjs({5, 4, 2},
                     {L("Conv2D", {{"name", "conv2d"}, {"filters", 3}, {"kernel_size", {3, 3}}, {"padding", "same"},
                                   {"activation", act}}),
                      L("Flatten", {{"name", "flatten"}}), L("Dense", {{"name", "dense"}, {"units", 4}})},
                     true, seed += 10, 0.8f);
  }
}

TEST(LayersCoreTfjsTest, ActivationLayer) {
  RT_REQUIRE_TFJS();
  uint64_t seed = 3000;
  for (const char* act : {"tanh", "gelu", "softmax", "elu", "relu"}) {
    SCOPED_TRACE(act);
    CheckAgainstTfjs({4}, {L("Dense", {{"name", "dense"}, {"units", 5}}),
                           L("Activation", {{"name", "activation"}, {"activation", act}})},
                     true, seed += 10, 0.8f);
  }
}

TEST(LayersCoreTfjsTest, ReLULayer) {
  RT_REQUIRE_TFJS();
  const std::vector<float> out = CheckAgainstTfjs(
      {4}, {L("Dense", {{"name", "dense"}, {"units", 8}}), L("ReLU", {{"name", "re_lu"}})}, true, 3100, 1.0f);
  EXPECT_GT(std::count(out.begin(), out.end(), 0.0f), 0) << "no negative input: the case tests nothing";
  // max_value clips: some outputs sit at exactly 0.5.
  const std::vector<float> clipped = CheckAgainstTfjs(
      {4}, {L("Dense", {{"name", "dense"}, {"units", 8}}), L("ReLU", {{"name", "re_lu"}, {"max_value", 0.5}})}, true,
      3200, 1.0f);
  EXPECT_GT(std::count(clipped.begin(), clipped.end(), 0.5f), 0) << "nothing clipped: the case tests nothing";
}

TEST(LayersCoreTfjsTest, LeakyReLULayer) {
  RT_REQUIRE_TFJS();
  for (double alpha : {0.3, 0.05}) {  // 0.3: the default (tfjs writes it out)
    SCOPED_TRACE(alpha);
    json config = {{"name", "leaky_re_lu"}};
    if (alpha != 0.3) config["alpha"] = alpha;
    CheckAgainstTfjs({4}, {L("Dense", {{"name", "dense"}, {"units", 6}}), L("LeakyReLU", config)}, true, 3300);
  }
}

TEST(LayersCoreTfjsTest, SoftmaxLayer) {
  RT_REQUIRE_TFJS();
  CheckAgainstTfjs({4}, {L("Dense", {{"name", "dense"}, {"units", 5}}), L("Softmax", {{"name", "softmax"}})}, true,
                   3400, 1.0f);
}

TEST(LayersCoreTfjsTest, RescalingLayer) {
  RT_REQUIRE_TFJS();
  CheckAgainstTfjs({4}, {L("Dense", {{"name", "dense"}, {"units", 5}}),
                         L("Rescaling", {{"name", "rescaling"}, {"scale", 0.25}, {"offset", -1.5}})},
                   true, 3500);
  // Keras 3's per-channel lists (tfjs broadcasts them over the last axis).
  CheckAgainstTfjs({3, 2, 2},
                   {L("Conv2D", {{"name", "conv2d"}, {"filters", 3}, {"kernel_size", 1}}),
                    L("Rescaling", {{"name", "rescaling"}, {"scale", {0.5, -2.0, 3.0}}, {"offset", {1.0, 0.0, -0.5}}}),
                    L("Flatten", {{"name", "flatten"}}), L("Dense", {{"name", "dense"}, {"units", 2}})},
                   true, 3550);
}

TEST(LayersCoreTfjsTest, AddAndMultiply) {
  RT_REQUIRE_TFJS();
  for (const char* cls : {"Add", "Multiply"}) {
    SCOPED_TRACE(cls);
    // Three branches from the input, merged: every branch's kernel gradient is the
    // merge's input gradient for that branch.
    CheckAgainstTfjs({4},
                     {L("Dense", {{"name", "a"}, {"units", 5}}, {"input"}),
                      L("Dense", {{"name", "b"}, {"units", 5}}, {"input"}),
                      L("Dense", {{"name", "c"}, {"units", 5}}, {"input"}),
                      L(cls, {{"name", "merge"}}, {"a", "b", "c"})},
                     false, 3600);
  }
}

TEST(LayersCoreTfjsTest, ConcatenateAxes) {
  RT_REQUIRE_TFJS();
  // Conv branches of [4, 3, 2] and [4, 3, 3] on the last axis; [4, 3, 2] and [2, 3, 2]
  // (strided) on axis 1, the height.
  CheckAgainstTfjs({4, 3, 2},
                   {L("Conv2D", {{"name", "a"}, {"filters", 2}, {"kernel_size", 3}, {"padding", "same"}}, {"input"}),
                    L("Conv2D", {{"name", "b"}, {"filters", 3}, {"kernel_size", 1}}, {"input"}),
                    L("Concatenate", {{"name", "cat"}}, {"a", "b"}), L("Flatten", {{"name", "flatten"}}),
                    L("Dense", {{"name", "dense"}, {"units", 3}})},
                   false, 3700);
  CheckAgainstTfjs({4, 3, 2},
                   {L("Conv2D", {{"name", "a"}, {"filters", 2}, {"kernel_size", 3}, {"padding", "same"}}, {"input"}),
                    L("Conv2D", {{"name", "b"}, {"filters", 2}, {"kernel_size", 1}, {"strides", {2, 1}}}, {"input"}),
                    L("Concatenate", {{"name", "cat"}, {"axis", 1}}, {"a", "b"}), L("Flatten", {{"name", "flatten"}}),
                    L("Dense", {{"name", "dense"}, {"units", 3}})},
                   false, 3800);
}

}  // namespace
}  // namespace ringtrain::nn
