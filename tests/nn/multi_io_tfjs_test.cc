// A model with two inputs and two outputs against TensorFlow.js (tests/oracle), the Keras
// reference: tfjs builds the Functional model and writes its JSON, ringtrain translates that
// JSON (nn/keras/keras_json.h) and builds it; with the same weights and inputs,
//   - the outputs and every weight's gradient agree within AllClose's relative 1e-4, with
//     the inputs laid in one row in the order of their names (the second input first here)
//     and the outputs side by side in the model's order;
//   - a short SGD run with a loss per output and loss_weights (engine::Objective::ForOutputs)
//     follows tfjs' model.trainOnBatch: the total loss and each output's loss per step, and
//     the final weights.
// Skips, with the reason, where the oracle is not installed.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "engine/objective.h"
#include "nn/keras/keras_json.h"
#include "nn/model.h"
#include "nn/optimizers/optimizer.h"
#include "test_util.h"
#include "tfjs_model_check.h"
#include "testing/tfjs_oracle.h"

namespace ringtrain::nn {
namespace {

using nlohmann::json;
using ::ringtrain::testing::AllClose;
using ::ringtrain::testing::RunTfjs;
using ::ringtrain::testing::TfjsTensor;
using ::ringtrain::testing::TfjsValues;

constexpr int kPixels = 5 * 5 * 2, kExtra = 3, kA = 4, kB = 1;

// "pixels" (5, 5, 2) -> Conv2D -> Flatten, "extra" (3,) -> Dense(tanh); joined, into two
// heads: "head_a" (4 logits) and "head_b" (1 sigmoid).
json BuildRequest() {
  const json layers = json::array({
      {{"class_name", "Conv2D"},
       {"config", {{"name", "conv"}, {"filters", 3}, {"kernel_size", {3, 3}}, {"activation", "relu"}}},
       {"inputs", {"pixels"}}},
      {{"class_name", "Flatten"}, {"config", {{"name", "flat"}}}},
      {{"class_name", "Dense"},
       {"config", {{"name", "extra_dense"}, {"units", 4}, {"activation", "tanh"}}},
       {"inputs", {"extra"}}},
      {{"class_name", "Concatenate"}, {"config", {{"name", "joined"}}}, {"inputs", {"flat", "extra_dense"}}},
      {{"class_name", "Dense"}, {"config", {{"name", "head_a"}, {"units", kA}}}},
      {{"class_name", "Dense"},
       {"config", {{"name", "head_b"}, {"units", kB}, {"activation", "sigmoid"}}},
       {"inputs", {"joined"}}},
  });
  return {{"kind", "build"},
          {"sequential", false},
          {"inputs", json::array({{{"name", "pixels"}, {"shape", {5, 5, 2}}}, {{"name", "extra"}, {"shape", {kExtra}}}})},
          {"layers", layers},
          {"outputs", {"head_a", "head_b"}}};
}

struct Built {
  std::unique_ptr<Model> model;
  json keras;    // tfjs' model JSON
  json weights;  // tfjs' initial weights, by full name
};

Built Build() {
  Built b;
  auto r = RunTfjs(BuildRequest());
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  if (!r.ok()) return b;
  b.keras = (*r)["model_json"];
  b.weights = (*r)["weights"];
  auto compact = KerasJsonToCompact(b.keras);
  EXPECT_TRUE(compact.ok()) << compact.status().ToString();
  if (!compact.ok()) return b;
  auto m = Model::FromJson(*compact, 1);
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  if (!m.ok()) return b;
  b.model = std::move(m).value();
  // tfjs' initial weights, so that both sides start from the same point.
  for (const ParamInfo& p : b.model->param_infos()) {
    EXPECT_TRUE(b.weights.contains(p.name)) << p.name << " not in " << b.weights.dump().substr(0, 300);
    if (!b.weights.contains(p.name)) continue;
    const std::vector<float> v = TfjsValues(b.weights[p.name], p.shape);
    std::copy(v.begin(), v.end(), b.model->params() + p.offset);
  }
  return b;
}

// The model's input row for `batch` examples: "extra" then "pixels" (name order).
std::vector<float> Packed(const std::vector<float>& pixels, const std::vector<float>& extra, int batch) {
  std::vector<float> x;
  for (int n = 0; n < batch; ++n) {
    x.insert(x.end(), extra.begin() + n * kExtra, extra.begin() + (n + 1) * kExtra);
    x.insert(x.end(), pixels.begin() + n * kPixels, pixels.begin() + (n + 1) * kPixels);
  }
  return x;
}

TEST(MultiIoTfjsTest, TwoInputsAndTwoOutputsForwardAndGradientsMatchTfjs) {
  RT_REQUIRE_TFJS();
  Built b = Build();
  ASSERT_NE(b.model, nullptr);
  Model& m = *b.model;
  ASSERT_EQ(m.inputs().size(), 2u);
  EXPECT_EQ(m.inputs()[0].name, "pixels");
  EXPECT_EQ(m.inputs()[0].offset, static_cast<size_t>(kExtra));
  ASSERT_EQ(m.outputs().size(), 2u);
  EXPECT_EQ(m.output_size(), static_cast<size_t>(kA + kB));

  const int batch = 3;
  const std::vector<float> pixels = testing::RandomVector(batch * kPixels, 11);
  const std::vector<float> extra = testing::RandomVector(batch * kExtra, 12);
  const std::vector<float> dy_a = testing::RandomVector(batch * kA, 13);
  const std::vector<float> dy_b = testing::RandomVector(batch * kB, 14);
  auto r = RunTfjs({{"kind", "model"},
                    {"model", b.keras},
                    {"weights", b.weights},
                    {"inputs", {TfjsTensor({batch, 5, 5, 2}, pixels), TfjsTensor({batch, kExtra}, extra)}},
                    {"training", true},
                    {"dy", {TfjsTensor({batch, kA}, dy_a), TfjsTensor({batch, kB}, dy_b)}}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const std::vector<float> want_a = TfjsValues((*r)["outputs"][0], {batch, kA});
  const std::vector<float> want_b = TfjsValues((*r)["outputs"][1], {batch, kB});

  const std::vector<float> x = Packed(pixels, extra, batch);
  const float* out = m.Forward(x.data(), batch, /*training=*/true);
  std::vector<float> got_a, got_b, dy;
  for (int n = 0; n < batch; ++n) {
    const float* row = out + n * (kA + kB);
    got_a.insert(got_a.end(), row, row + kA);
    got_b.insert(got_b.end(), row + kA, row + kA + kB);
    dy.insert(dy.end(), dy_a.begin() + n * kA, dy_a.begin() + (n + 1) * kA);
    dy.insert(dy.end(), dy_b.begin() + n * kB, dy_b.begin() + (n + 1) * kB);
  }
  EXPECT_TRUE(AllClose(got_a, want_a)) << "head_a";
  EXPECT_TRUE(AllClose(got_b, want_b)) << "head_b";
  m.Backward(dy.data());
  testing::ExpectWeightsMatchTfjs(m, m.grads(), (*r)["weight_grads"], "gradient");
}

TEST(MultiIoTfjsTest, LossPerOutputWithLossWeightsFollowsTfjsTraining) {
  RT_REQUIRE_TFJS();
  Built b = Build();
  ASSERT_NE(b.model, nullptr);
  Model& m = *b.model;
  const int n = 8, batch = 4, steps = 5;
  const float lr = 0.1f;
  const std::vector<float> pixels = testing::RandomVector(n * kPixels, 21, 2.0f);
  const std::vector<float> extra = testing::RandomVector(n * kExtra, 22, 2.0f);
  const std::vector<int32_t> labels_a = {0, 3, 1, 2, 2, 0, 1, 3};
  const std::vector<int32_t> labels_b = {1, 0, 0, 1, 1, 1, 0, 0};
  const double weight_b = 0.5;
  auto r = RunTfjs({{"kind", "train"},
                    {"model", b.keras},
                    {"weights", b.weights},
                    {"inputs", {TfjsTensor({n, 5, 5, 2}, pixels), TfjsTensor({n, kExtra}, extra)}},
                    {"labels", {TfjsTensor({n}, std::vector<float>(labels_a.begin(), labels_a.end())),
                                TfjsTensor({n, 1}, std::vector<float>(labels_b.begin(), labels_b.end()))}},
                    {"loss", {{{"name", "sparse_categorical_crossentropy"}, {"from_logits", true}},
                              {{"name", "binary_crossentropy"}}}},
                    {"loss_weights", {1.0, weight_b}},
                    {"optimizer", {{"name", "sgd"}, {"learning_rate", lr}}},
                    {"steps", steps},
                    {"batch", batch}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();

  // The same objective as a job writes it: a loss per output name and the weights.
  std::vector<engine::OutputLayout> layouts(2);
  layouts[0] = {"head_a", 0, kA, kA, 0, false};
  layouts[1] = {"head_b", kA, kB, kB, 1, false};
  auto objective = engine::Objective::ForOutputs(
      {{"head_a", {{"type", "sparse_categorical_crossentropy"}, {"from_logits", true}}},
       {"head_b", "binary_crossentropy"}},
      {{"head_b", weight_b}}, json::array({"accuracy"}), layouts);
  ASSERT_TRUE(objective.ok()) << objective.status().ToString();
  ASSERT_EQ(objective->metrics()[0]->name(), "head_a_loss");
  ASSERT_EQ(objective->metrics()[2]->name(), "head_b_loss");
  auto opt = Optimizer::FromJson({{"type", "sgd"}, {"learning_rate", lr}});
  ASSERT_TRUE(opt.ok()) << opt.status().ToString();
  std::vector<float> losses, loss_a, loss_b, grad(batch * (kA + kB));
  for (int s = 0; s < steps; ++s) {
    const int start = (s * batch) % n;
    const std::vector<float> x =
        Packed(std::vector<float>(pixels.begin() + start * kPixels, pixels.begin() + (start + batch) * kPixels),
               std::vector<float>(extra.begin() + start * kExtra, extra.begin() + (start + batch) * kExtra), batch);
    std::vector<int32_t> labels;
    for (int i = start; i < start + batch; ++i) labels.insert(labels.end(), {labels_a[i], labels_b[i]});
    const float* out = m.Forward(x.data(), batch, /*training=*/true);
    losses.push_back(static_cast<float>(objective->LossSum(out, labels.data(), batch, 1.0f / batch, grad.data()) / batch));
    std::vector<double> sums(static_cast<size_t>(objective->num_sums()), 0.0);
    objective->Accumulate(out, labels.data(), batch, sums.data());
    const std::vector<double> values = objective->Results(sums.data());
    loss_a.push_back(static_cast<float>(values[0]));
    loss_b.push_back(static_cast<float>(values[2]));
    m.Backward(grad.data());
    (*opt)->Apply(m.params(), m.grads(), m.num_params());
  }
  std::vector<float> want, want_a, want_b;
  for (const json& l : (*r)["losses"]) want.push_back(l.get<float>());
  for (const json& l : (*r)["output_losses"]) {
    want_a.push_back(l[0].get<float>());
    want_b.push_back(l[1].get<float>());
  }
  EXPECT_TRUE(AllClose(losses, want)) << "total loss per step";
  EXPECT_TRUE(AllClose(loss_a, want_a)) << "head_a's loss per step";
  EXPECT_TRUE(AllClose(loss_b, want_b)) << "head_b's loss per step";
  EXPECT_LT(want.back(), want.front()) << "the run must move";
  testing::ExpectWeightsMatchTfjs(m, m.params(), (*r)["weights"], "final value");
}

}  // namespace
}  // namespace ringtrain::nn
