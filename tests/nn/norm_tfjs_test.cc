// BatchNormalization (training, inference, frozen), LayerNormalization and Dropout against
// TensorFlow.js (tests/oracle), the Keras reference: outputs, input gradients, weight
// gradients and BatchNormalization's moving statistics after one training call, within
// AllClose's relative 1e-4; and a Sequential built by tfjs as Keras model JSON, loaded
// through nn/keras/keras_json.h. Skips, with the reason, where the oracle is not installed.
#include <cmath>
#include <map>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "nn/layers/batch_norm.h"
#include "nn/layers/dropout.h"
#include "nn/keras/keras_json.h"
#include "nn/layers/layer_norm.h"
#include "nn/model.h"
#include "norm_test_util.h"
#include "testing/tfjs_oracle.h"

namespace ringtrain::nn {
namespace {

using nlohmann::json;
using ::ringtrain::testing::AllClose;
using ::ringtrain::testing::RunTfjs;
using ::ringtrain::testing::TfjsTensor;
using ::ringtrain::testing::TfjsValues;
using testing::Bind;
using testing::BoundLayer;
using testing::RandomVector;

std::vector<int64_t> WithBatch(int batch, const Shape& s) {
  std::vector<int64_t> out{batch};
  out.insert(out.end(), s.begin(), s.end());
  return out;
}

// Random values for every weight (moving variances positive), in the layer and as the
// oracle's "weights".
json RandomizeWeights(BoundLayer& b, uint64_t seed) {
  json w = json::object();
  const auto specs = b.layer->ParamSpecs();
  for (size_t k = 0; k < specs.size(); ++k) {
    std::vector<float> v = RandomVector(b.count(k), seed + k, 0.8f);
    for (float& x : v) x = specs[k].suffix == "moving_variance" ? 0.5f + std::abs(x) : (specs[k].suffix == "gamma" ? 1.0f + x : x);
    std::copy(v.begin(), v.end(), b.CpuRun::param(k));
    w[specs[k].suffix] = TfjsTensor(specs[k].shape, v);
  }
  return w;
}

struct LayerCase {
  std::string class_name;
  json config;  // Keras arguments, both sides
  Shape input;  // per example
  bool training = true;
  bool trainable = true;
  // tfjs 4.22's LayerNormalization crashes computing gradients with center or scale
  // false; the oracle then runs with both (Keras' semantics are beta 0 and gamma 1),
  // given these extra weights, and its gradients of them are not compared.
  json oracle_config = nullptr;
  json oracle_extra_weights = json::object();
};

// One layer, both sides: forward, backward with dy, weight gradients and (for
// BatchNormalization) the weights after the call.
void CheckLayer(const LayerCase& c, StatusOr<std::unique_ptr<Layer>> made, uint64_t seed) {
  auto b = Bind(std::move(made), c.trainable);
  ASSERT_NE(b, nullptr);
  const int batch = 3;
  json weights = RandomizeWeights(*b, seed);
  weights.update(c.oracle_extra_weights);
  const size_t n = static_cast<size_t>(batch * b->layer->input_size());
  std::vector<float> x = RandomVector(n, seed + 20, 1.5f);
  for (size_t i = 0; i < n; ++i) x[i] += 0.3f * static_cast<float>(i % 5);  // per-channel offsets
  const std::vector<float> dy = RandomVector(n, seed + 21);
  json config = c.oracle_config.is_null() ? c.config : c.oracle_config;
  config["trainable"] = c.trainable;
  auto r = RunTfjs({{"kind", "layer"},
                    {"layer", {{"class_name", c.class_name}, {"config", config}}},
                    {"inputs", {TfjsTensor(WithBatch(batch, c.input), x)}},
                    {"weights", weights},
                    {"training", c.training},
                    {"dy", TfjsTensor(WithBatch(batch, c.input), dy)}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const auto shape = WithBatch(batch, c.input);
  const float* out = b->Forward(x.data(), batch, c.training);
  EXPECT_TRUE(AllClose(std::vector<float>(out, out + n), TfjsValues((*r)["output"], shape))) << "output";
  const float* din = b->Backward(dy.data(), true);
  ASSERT_NE(din, nullptr);
  EXPECT_TRUE(AllClose(std::vector<float>(din, din + n), TfjsValues((*r)["input_grads"][0], shape))) << "input gradient";
  const auto specs = b->layer->ParamSpecs();
  size_t compared = 0;
  for (size_t k = 0; k < specs.size(); ++k) {
    if (b->CpuRun::grad(k) == nullptr) {
      EXPECT_FALSE((*r)["weight_grads"].contains(specs[k].suffix)) << specs[k].suffix << " is trainable in tfjs";
      continue;
    }
    ++compared;
    EXPECT_TRUE(AllClose(b->grad_values(k), TfjsValues((*r)["weight_grads"][specs[k].suffix], specs[k].shape)))
        << "gradient of " << specs[k].suffix;
  }
  EXPECT_EQ(compared + c.oracle_extra_weights.size(), (*r)["weight_grads"].size());
  // After the call: Keras updates the moving statistics in a training call only.
  if (c.training && b->num_stats() > 0) b->ApplyReducedStats(1);
  for (size_t k = 0; k < specs.size(); ++k) {
    EXPECT_TRUE(AllClose(b->param_values(k), TfjsValues((*r)["weights_after"][specs[k].suffix], specs[k].shape)))
        << specs[k].suffix << " after the call";
  }
}

void CheckBatchNorm(const LayerCase& c, uint64_t seed) {
  json ours = c.config;
  ours["type"] = "BatchNormalization";
  CheckLayer(c, BatchNorm::Create(ours, "bn", c.input, "t"), seed);
}

TEST(NormTfjsTest, BatchNormTrainingImage) {
  RT_REQUIRE_TFJS();
  CheckBatchNorm({"BatchNormalization", {{"axis", -1}, {"momentum", 0.9}}, {4, 3, 5}}, 100);
}

TEST(NormTfjsTest, BatchNormTrainingDefaultsFlat) {
  RT_REQUIRE_TFJS();
  CheckBatchNorm({"BatchNormalization", json::object(), {6}}, 200);
}

TEST(NormTfjsTest, BatchNormTrainingWithoutCenterOrScale) {
  RT_REQUIRE_TFJS();
  CheckBatchNorm({"BatchNormalization", {{"center", false}, {"epsilon", 0.01}}, {2, 2, 4}}, 300);
  CheckBatchNorm({"BatchNormalization", {{"scale", false}, {"momentum", 0.5}}, {2, 2, 4}}, 400);
}

// Inference: the moving statistics; tfjs' gradients of the inference formula too.
TEST(NormTfjsTest, BatchNormInference) {
  RT_REQUIRE_TFJS();
  LayerCase c{"BatchNormalization", {{"epsilon", 0.002}}, {3, 3, 4}};
  c.training = false;
  CheckBatchNorm(c, 500);
}

// Frozen: inference mode although training (the harness applies Keras' rule to tfjs), no
// weight gradients, the moving statistics unchanged.
TEST(NormTfjsTest, BatchNormFrozen) {
  RT_REQUIRE_TFJS();
  LayerCase c{"BatchNormalization", json::object(), {3, 2, 4}};
  c.trainable = false;
  CheckBatchNorm(c, 600);
}

TEST(NormTfjsTest, LayerNormalization) {
  RT_REQUIRE_TFJS();
  const Shape input{2, 3, 5};
  std::vector<LayerCase> cases = {{"LayerNormalization", {{"axis", -1}}, input},
                                  {"LayerNormalization", {{"axis", {-2, -1}}, {"epsilon", 0.01}}, input},
                                  {"LayerNormalization", {{"center", false}}, input},
                                  {"LayerNormalization", {{"scale", false}}, input}};
  cases[2].oracle_config = json::object();
  cases[2].oracle_extra_weights = {{"beta", TfjsTensor({5}, std::vector<float>(5, 0.0f))}};
  cases[3].oracle_config = json::object();
  cases[3].oracle_extra_weights = {{"gamma", TfjsTensor({5}, std::vector<float>(5, 1.0f))}};
  for (const LayerCase& c : cases) {
    SCOPED_TRACE(c.config.dump());
    json ours = c.config;
    ours["type"] = "LayerNormalization";
    CheckLayer(c, LayerNorm::Create(ours, "ln", c.input, "t"), 700);
  }
}

TEST(NormTfjsTest, DropoutRateZeroAndInferenceAreTheIdentity) {
  RT_REQUIRE_TFJS();
  struct Case {
    double rate;
    bool training;
  };
  for (const Case& dc : {Case{0.0, true}, Case{0.5, false}}) {
    SCOPED_TRACE(dc.rate);
    const LayerCase c{"Dropout", {{"rate", dc.rate}}, {4, 3}, dc.training};
    CheckLayer(c, Dropout::Create({{"type", "Dropout"}, {"rate", dc.rate}}, "dropout", c.input, "t"), 800);
  }
}

// ---- a Sequential from tfjs' Keras JSON -------------------------------------------------------

// BatchNormalization -> Dropout -> LayerNormalization on a flat input, built by tfjs as
// Keras model JSON and loaded through KerasJsonToCompact: the same weights (names, shapes,
// trainable or not); one training step's output, every gradient (BatchNormalization's
// carry Dropout's and LayerNormalization's input gradients) and the moving statistics
// agree. Dropout has rate 0 here (the masks are not tfjs' stream).
TEST(NormTfjsTest, SequentialFromKerasJson) {
  RT_REQUIRE_TFJS();
  const Shape input{6};
  const int classes = 6;
  const json layers = {
      {{"class_name", "BatchNormalization"}, {"config", {{"name", "bn"}, {"momentum", 0.8}}}},
      {{"class_name", "Dropout"}, {"config", {{"name", "dropout"}, {"rate", 0.0}}}},
      {{"class_name", "LayerNormalization"}, {"config", {{"name", "ln"}}}}};
  auto built = RunTfjs({{"kind", "build"}, {"inputs", {{{"name", "input"}, {"shape", input}}}}, {"layers", layers}});
  ASSERT_TRUE(built.ok()) << built.status().ToString();
  auto compact = KerasJsonToCompact((*built)["model_json"]);
  ASSERT_TRUE(compact.ok()) << compact.status().ToString();
  auto made = Model::FromJson(*compact, 1);
  ASSERT_TRUE(made.ok()) << made.status().ToString() << "\n" << compact->dump();
  Model& m = **made;
  const json& init = (*built)["weights"];
  ASSERT_EQ(init.size(), m.param_infos().size()) << init.dump();
  json weights = json::object();
  uint64_t seed = 900;
  for (const ParamInfo& p : m.param_infos()) {
    ASSERT_TRUE(init.contains(p.name)) << p.name;
    EXPECT_EQ(init[p.name]["shape"], json(p.shape)) << p.name;
    EXPECT_EQ(p.trainable, p.name.find("moving") == std::string::npos) << p.name;
    std::vector<float> v = RandomVector(p.count, seed++, 0.5f);
    if (p.name == "bn/moving_variance") {
      for (float& x : v) x = 0.5f + std::abs(x);
    }
    std::copy(v.begin(), v.end(), m.params() + p.offset);
    weights[p.name] = TfjsTensor(p.shape, v);
  }
  const int batch = 4;
  const std::vector<float> x = RandomVector(batch * 6, 950, 2.0f), dy = RandomVector(batch * classes, 951);
  auto r = RunTfjs({{"kind", "model"},
                    {"model", (*built)["model_json"]},
                    {"weights", weights},
                    {"inputs", {TfjsTensor(WithBatch(batch, input), x)}},
                    {"training", true},
                    {"dy", TfjsTensor({batch, classes}, dy)}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const float* out = m.Forward(x.data(), batch, true);
  EXPECT_TRUE(AllClose(std::vector<float>(out, out + batch * classes), TfjsValues((*r)["outputs"][0], {batch, classes})));
  m.Backward(dy.data());
  m.ApplyReducedStats(1);
  for (const ParamInfo& p : m.param_infos()) {
    if (p.trainable) {
      EXPECT_TRUE(AllClose(std::vector<float>(m.grads() + p.offset, m.grads() + p.offset + p.count),
                           TfjsValues((*r)["weight_grads"][p.name], p.shape)))
          << "gradient of " << p.name;
    }
    EXPECT_TRUE(AllClose(std::vector<float>(m.params() + p.offset, m.params() + p.offset + p.count),
                         TfjsValues((*r)["weights_after"][p.name], p.shape)))
        << p.name << " after the step";
  }
}

}  // namespace
}  // namespace ringtrain::nn
