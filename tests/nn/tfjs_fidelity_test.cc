// ringtrain's layers against TensorFlow.js (tests/oracle), the Keras reference: the same
// weights and inputs in both, forward outputs and parameter gradients compared within
// AllClose's relative 1e-4 (|a - b| <= 1e-4 * max(1, |b|)), and a short SGD run whose loss
// per step follows tfjs'. Only nn::Model's public API (FromJson, params, param_infos,
// Forward, Backward) is used. Skips, with the reason, where the oracle is not installed.
//
// The model's first layer computes no input gradient, so every case starts with a layer
// that has parameters and compares those gradients; the upstream gradient dy goes into
// Model::Backward as dL/dlogits, and to tfjs as the dy of sum(output * dy).
#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "nn/losses/loss.h"
#include "nn/model.h"
#include "nn/optimizers/optimizer.h"
#include "test_util.h"
#include "testing/tfjs_oracle.h"

namespace ringtrain::nn {
namespace {

using nlohmann::json;
using ::ringtrain::testing::AllClose;
using ::ringtrain::testing::RunTfjs;
using ::ringtrain::testing::TfjsTensor;
using ::ringtrain::testing::TfjsValues;
using Weights = std::map<std::string, std::vector<float>>;

std::unique_ptr<Model> Build(const json& model_json) {
  auto m = Model::FromJson(model_json, 1);
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return m.ok() ? std::move(m).value() : nullptr;
}

// Random weights for every parameter (biases too, so they matter), written into the model.
Weights SetRandomWeights(Model& m, uint64_t seed) {
  Weights w;
  for (const ParamInfo& p : m.param_infos()) {
    w[p.name] = testing::RandomVector(p.count, seed++, 0.5f);
    std::copy(w[p.name].begin(), w[p.name].end(), m.params() + p.offset);
  }
  return w;
}

// The weights as the oracle takes them; `strip` drops "<layer>/" for a layer request.
json OracleWeights(const Model& m, const Weights& w, const std::string& strip = "") {
  json out = json::object();
  for (const ParamInfo& p : m.param_infos()) {
    std::string name = p.name;
    if (!strip.empty() && name.rfind(strip, 0) == 0) name = name.substr(strip.size());
    out[name] = TfjsTensor(p.shape, w.at(p.name));
  }
  return out;
}


std::vector<int64_t> Concat(int64_t batch, const std::vector<int64_t>& shape) {
  std::vector<int64_t> s{batch};
  s.insert(s.end(), shape.begin(), shape.end());
  return s;
}

// Runs x through m (training) and back with dy; compares the output with `want_out` and
// each parameter's gradient with the oracle's, named as ours less the `strip` prefix.
void CompareForwardBackward(Model& m, const std::vector<float>& x, int batch, const std::vector<float>& dy,
                            const std::vector<float>& want_out, const json& oracle_grads,
                            const std::string& strip) {
  const float* out = m.Forward(x.data(), batch, /*training=*/true);
  EXPECT_TRUE(AllClose(testing::Slice(out, 0, want_out.size()), want_out)) << "forward output";
  m.Backward(dy.data());
  for (const ParamInfo& p : m.param_infos()) {
    const std::string name = p.name.substr(strip.size());
    ASSERT_TRUE(oracle_grads.contains(name)) << "tfjs gave no gradient for " << name << ": " << oracle_grads.dump();
    EXPECT_TRUE(AllClose(testing::Slice(m.grads(), p.offset, p.count), TfjsValues(oracle_grads[name], p.shape)))
        << "gradient of " << p.name;
  }
}

// ---- Dense --------------------------------------------------------------------------------

TEST(TfjsFidelityTest, DenseLinearAndRelu) {
  RT_REQUIRE_TFJS();
  for (const char* activation : {"linear", "relu"}) {
    SCOPED_TRACE(activation);
    const json config = {{"units", 5}, {"activation", activation}};
    json layer = config;
    layer["type"] = "Dense";
    layer["name"] = "dense";
    auto m = Build({{"input_shape", {7}}, {"layers", {layer}}});
    ASSERT_NE(m, nullptr);
    const int batch = 4;
    const Weights w = SetRandomWeights(*m, 100);
    const std::vector<float> x = testing::RandomVector(batch * 7, 1);
    const std::vector<float> dy = testing::RandomVector(batch * 5, 2);

    auto r = RunTfjs({{"kind", "layer"},
                      {"layer", {{"class_name", "Dense"}, {"config", config}}},
                      {"inputs", {TfjsTensor({batch, 7}, x)}},
                      {"weights", OracleWeights(*m, w, "dense/")},
                      {"training", true},
                      {"dy", TfjsTensor({batch, 5}, dy)}});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    const std::vector<float> want = TfjsValues((*r)["output"], {batch, 5});
    if (std::string(activation) == "relu") {  // the case must exercise relu's cut-off
      EXPECT_GT(std::count(want.begin(), want.end(), 0.0f), 0) << "no negative pre-activation";
    }
    CompareForwardBackward(*m, x, batch, dy, want, (*r)["weight_grads"], "dense/");
  }
}

// ---- Conv2D -------------------------------------------------------------------------------

struct ConvCase {
  const char* name;
  json config;            // Keras arguments, shared by both sides
  std::vector<int64_t> input;  // per example, HWC
  std::vector<int64_t> output;  // per example, HWC, as Keras computes it
};
void PrintTo(const ConvCase& c, std::ostream* os) { *os << c.name; }

class TfjsConv2DTest : public ::testing::TestWithParam<ConvCase> {};

// A model of Conv2D then Flatten here; the oracle's layer output [b, h, w, f] flattened
// row-major is Flatten's order, so outputs and dy line up element for element.
TEST_P(TfjsConv2DTest, MatchesTfjs) {
  RT_REQUIRE_TFJS();
  const ConvCase& c = GetParam();
  json layer = c.config;
  layer["type"] = "Conv2D";
  layer["name"] = "conv2d";
  auto m = Build({{"input_shape", c.input}, {"layers", {layer, {{"type", "Flatten"}}}}});
  ASSERT_NE(m, nullptr);
  const int batch = 2;
  int64_t out_size = 1, in_size = 1;
  for (int64_t d : c.output) out_size *= d;
  for (int64_t d : c.input) in_size *= d;
  ASSERT_EQ(m->num_classes(), out_size) << "ringtrain's output shape differs from Keras'";
  const Weights w = SetRandomWeights(*m, 200);
  const std::vector<float> x = testing::RandomVector(batch * in_size, 3);
  const std::vector<float> dy = testing::RandomVector(batch * out_size, 4);

  auto r = RunTfjs({{"kind", "layer"},
                    {"layer", {{"class_name", "Conv2D"}, {"config", c.config}}},
                    {"inputs", {TfjsTensor(Concat(batch, c.input), x)}},
                    {"weights", OracleWeights(*m, w, "conv2d/")},
                    {"training", true},
                    {"dy", TfjsTensor(Concat(batch, c.output), dy)}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  CompareForwardBackward(*m, x, batch, dy, TfjsValues((*r)["output"], Concat(batch, c.output)),
                         (*r)["weight_grads"], "conv2d/");
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, TfjsConv2DTest,
    ::testing::Values(
        ConvCase{"valid", json{{"filters", 3}, {"kernel_size", {3, 3}}}, {6, 5, 2}, {4, 3, 3}},
        ConvCase{"same_relu", json{{"filters", 4}, {"kernel_size", {3, 3}}, {"padding", "same"}, {"activation", "relu"}},
                 {5, 6, 3}, {5, 6, 4}},
        ConvCase{"valid_strides2", json{{"filters", 2}, {"kernel_size", {3, 2}}, {"strides", {2, 2}}}, {7, 6, 2},
                 {3, 3, 2}},
        // 'same' with stride 2 and an even kernel: TF pads the extra row/column at the end.
        ConvCase{"same_strides2_even_kernel",
                 json{{"filters", 3}, {"kernel_size", {4, 4}}, {"strides", {2, 2}}, {"padding", "same"}}, {6, 5, 2},
                 {3, 3, 3}},
        ConvCase{"same_strides_2_1_no_bias",
                 json{{"filters", 2}, {"kernel_size", {3, 3}}, {"strides", {2, 1}}, {"padding", "same"},
                      {"use_bias", false}},
                 {5, 4, 3}, {3, 4, 2}}),
    [](const auto& info) { return std::string(info.param.name); });

// ---- MaxPooling2D and Flatten in a model ----------------------------------------------------

// The oracle's "build" writes the Keras model JSON of a Sequential; the same layers in
// ringtrain's compact form; the oracle's "model" request runs that JSON with our weights.
// Conv2D -> MaxPooling2D -> Flatten -> Dense: the conv gradients pass back through the
// pooling's argmax routing and the Dense kernel's gradient pins Flatten's (NHWC) order.
void CheckSequential(const std::vector<int64_t>& input, const json& pool_config, uint64_t seed) {
  const json keras_layers = {
      {{"class_name", "Conv2D"},
       {"config", {{"name", "conv2d"}, {"filters", 3}, {"kernel_size", {3, 3}}, {"padding", "same"},
                   {"activation", "relu"}}}},
      {{"class_name", "MaxPooling2D"}, {"config", pool_config}},
      {{"class_name", "Flatten"}, {"config", {{"name", "flatten"}}}},
      {{"class_name", "Dense"}, {"config", {{"name", "dense"}, {"units", 4}}}}};
  json compact_layers = json::array();
  for (const json& l : keras_layers) {
    json c = l["config"];
    c["type"] = l["class_name"];
    compact_layers.push_back(c);
  }
  auto m = Build({{"input_shape", input}, {"layers", compact_layers}});
  ASSERT_NE(m, nullptr);

  auto built = RunTfjs({{"kind", "build"},
                        {"inputs", {{{"name", "input"}, {"shape", input}}}},
                        {"layers", keras_layers}});
  ASSERT_TRUE(built.ok()) << built.status().ToString();
  // The Keras JSON and ringtrain agree on the parameters: same names, same shapes.
  const json& init = (*built)["weights"];
  ASSERT_EQ(init.size(), m->param_infos().size()) << init.dump();
  for (const ParamInfo& p : m->param_infos()) {
    ASSERT_TRUE(init.contains(p.name)) << p.name;
    EXPECT_EQ(init[p.name]["shape"], json(p.shape)) << p.name;
  }

  const int batch = 3;
  int64_t in_size = 1;
  for (int64_t d : input) in_size *= d;
  const Weights w = SetRandomWeights(*m, seed);
  const std::vector<float> x = testing::RandomVector(batch * in_size, seed + 50);
  const std::vector<float> dy = testing::RandomVector(batch * 4, seed + 51);
  auto r = RunTfjs({{"kind", "model"},
                    {"model", (*built)["model_json"]},
                    {"weights", OracleWeights(*m, w)},
                    {"inputs", {TfjsTensor(Concat(batch, input), x)}},
                    {"training", true},
                    {"dy", TfjsTensor({batch, 4}, dy)}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  CompareForwardBackward(*m, x, batch, dy, TfjsValues((*r)["outputs"][0], {batch, 4}), (*r)["weight_grads"], "");
}

TEST(TfjsFidelityTest, MaxPooling2DDefaultAndFlattenInSequential) {
  RT_REQUIRE_TFJS();
  CheckSequential({6, 6, 2}, {{"name", "max_pooling2d"}}, 300);
}

TEST(TfjsFidelityTest, MaxPooling2DSameStridesAndFlattenInSequential) {
  RT_REQUIRE_TFJS();
  CheckSequential({7, 5, 2}, {{"name", "max_pooling2d"}, {"pool_size", {3, 3}}, {"strides", {2, 2}},
                              {"padding", "same"}}, 400);
}

TEST(TfjsFidelityTest, MaxPooling2DValidOddWindowInSequential) {
  RT_REQUIRE_TFJS();
  CheckSequential({7, 6, 1}, {{"name", "max_pooling2d"}, {"pool_size", {2, 3}}, {"strides", {1, 2}}}, 500);
}

// ---- a training run -----------------------------------------------------------------------

// Dense(8, relu) -> Dense(3) on 8 examples, batch 4, SGD(0.1), sparse categorical
// cross-entropy from logits, 5 steps: tfjs' model.trainOnBatch against Forward,
// SparseSoftmaxCrossEntropy with grad_scale = 1/batch (the mean loss), Backward and
// Optimizer::Apply. The loss of every step and the final weights agree.
TEST(TfjsFidelityTest, SgdTrainingFollowsTfjsLossCurve) {
  RT_REQUIRE_TFJS();
  const json keras_layers = {
      {{"class_name", "Dense"}, {"config", {{"name", "dense"}, {"units", 8}, {"activation", "relu"}}}},
      {{"class_name", "Dense"}, {"config", {{"name", "dense_1"}, {"units", 3}}}}};
  auto m = Build({{"input_shape", {6}},
                  {"layers", {{{"type", "Dense"}, {"name", "dense"}, {"units", 8}, {"activation", "relu"}},
                              {{"type", "Dense"}, {"name", "dense_1"}, {"units", 3}}}}});
  ASSERT_NE(m, nullptr);
  auto built = RunTfjs({{"kind", "build"}, {"inputs", {{{"name", "input"}, {"shape", {6}}}}}, {"layers", keras_layers}});
  ASSERT_TRUE(built.ok()) << built.status().ToString();

  const int n = 8, batch = 4, steps = 5, classes = 3;
  const float lr = 0.1f;
  const Weights w = SetRandomWeights(*m, 600);
  const std::vector<float> x = testing::RandomVector(n * 6, 7, 2.0f);
  const std::vector<int32_t> labels = {0, 2, 1, 1, 0, 2, 2, 0};
  auto r = RunTfjs({{"kind", "train"},
                    {"model", (*built)["model_json"]},
                    {"weights", OracleWeights(*m, w)},
                    {"inputs", {TfjsTensor({n, 6}, x)}},
                    {"labels", TfjsTensor({n}, std::vector<float>(labels.begin(), labels.end()))},
                    {"loss", {{"name", "sparse_categorical_crossentropy"}, {"from_logits", true}}},
                    {"optimizer", {{"name", "sgd"}, {"learning_rate", lr}}},
                    {"steps", steps},
                    {"batch", batch}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ((*r)["losses"].size(), static_cast<size_t>(steps));

  auto opt = Optimizer::FromJson({{"type", "sgd"}, {"learning_rate", lr}});
  ASSERT_TRUE(opt.ok()) << opt.status().ToString();
  std::vector<float> losses, grad_logits(batch * classes);
  for (int s = 0; s < steps; ++s) {
    const int start = (s * batch) % n;
    const float* logits = m->Forward(x.data() + start * 6, batch, /*training=*/true);
    const LossStats stats =
        SparseSoftmaxCrossEntropy(logits, labels.data() + start, batch, classes, 1.0f / batch, grad_logits.data());
    losses.push_back(static_cast<float>(stats.loss_sum / batch));
    m->Backward(grad_logits.data());
    (*opt)->Apply(m->params(), m->grads(), m->num_params());
  }
  std::vector<float> want_losses;
  for (const json& l : (*r)["losses"]) want_losses.push_back(l.get<float>());
  EXPECT_TRUE(AllClose(losses, want_losses)) << "loss per step";
  // The run must move: a curve that stays flat would pass without testing the update.
  EXPECT_LT(want_losses.back(), want_losses.front());
  for (const ParamInfo& p : m->param_infos()) {
    EXPECT_TRUE(AllClose(testing::Slice(m->params(), p.offset, p.count), TfjsValues((*r)["weights"][p.name], p.shape)))
        << "final " << p.name;
  }
}

// The harness itself: a broken request is an error carrying the oracle's message, not a
// crash or a hang, so a test that sends a wrong request fails saying why.
TEST(TfjsFidelityTest, OracleReportsBadRequests) {
  RT_REQUIRE_TFJS();
  auto r = RunTfjs({{"kind", "layer"},
                    {"layer", {{"class_name", "Dense"}, {"config", {{"units", 2}}}}},
                    {"inputs", {TfjsTensor({1, 3}, {1, 2, 3})}},
                    {"weights", {{"kernel", TfjsTensor({2, 2}, {1, 2, 3, 4})}}}});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("kernel"), std::string::npos) << r.status().ToString();
  auto k = RunTfjs({{"kind", "no_such_kind"}});
  ASSERT_FALSE(k.ok());
  EXPECT_NE(k.status().message().find("kind"), std::string::npos) << k.status().ToString();
}

}  // namespace
}  // namespace ringtrain::nn
