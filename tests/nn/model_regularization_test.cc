// Weight regularization through the Model: the layers' kernel_/bias_regularizer reach
// ParamInfo, the penalty matches its formula, its gradient (added per ready range, as
// the engine does during Backward) matches finite differences of loss + penalty, and a
// frozen layer's weights count in the penalty but get no gradient (Keras).
#include "nn/model_regularization.h"

#include <cmath>
#include <memory>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "nn/losses/loss.h"
#include "nn/model.h"
#include "test_util.h"

namespace ringtrain::nn {
namespace {

using nlohmann::json;

std::unique_ptr<Model> Build(const json& j) {
  auto m = Model::FromJson(j, 7);
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return m.ok() ? std::move(m).value() : nullptr;
}

const json kModel = json::parse(R"({"input_shape": [6, 6, 1], "layers": [
    {"type": "conv2d", "filters": 2, "kernel_size": 3, "activation": "relu",
     "kernel_regularizer": {"class_name": "L2", "config": {"l2": 0.05}}},
    {"type": "flatten"},
    {"type": "dense", "units": 5, "activation": "relu", "kernel_regularizer": "l1_l2",
     "bias_regularizer": {"class_name": "L1L2", "config": {"l1": 0.02, "l2": 0.03}}},
    {"type": "dense", "units": 3, "bias_regularizer": "l1"}]})");

TEST(ModelRegularizationTest, LayersCarryTheirRegularizers) {
  auto model = Build(kModel);
  ASSERT_TRUE(model);
  const auto& infos = model->param_infos();
  ASSERT_EQ(infos.size(), 6u);
  EXPECT_EQ(infos[0].regularizer.l2(), 0.05);
  EXPECT_FALSE(infos[1].regularizer.active());  // conv2d/bias
  EXPECT_EQ(infos[2].regularizer.l1(), 0.01);
  EXPECT_EQ(infos[2].regularizer.l2(), 0.01);
  EXPECT_EQ(infos[3].regularizer.l1(), 0.02);
  EXPECT_EQ(infos[3].regularizer.l2(), 0.03);
  EXPECT_FALSE(infos[4].regularizer.active());  // dense_1/kernel
  EXPECT_EQ(infos[5].regularizer.l1(), 0.01);
  EXPECT_TRUE(HasRegularization(*model));

  // The penalty is the formula's, weight by weight.
  double want = 0;
  for (const ParamInfo& p : infos) {
    for (size_t i = 0; i < p.count; ++i) {
      const double w = model->params()[p.offset + i];
      want += p.regularizer.l1() * std::abs(w) + p.regularizer.l2() * w * w;
    }
  }
  EXPECT_NEAR(RegularizationPenalty(*model), want, 1e-12 * std::abs(want) + 1e-15);
  EXPECT_GT(want, 0);
}

TEST(ModelRegularizationTest, NoRegularizerMeansNoPenalty) {
  auto model = Build(json::parse(R"({"input_shape": [4], "layers": [
      {"type": "dense", "units": 3, "kernel_regularizer": null, "bias_regularizer": null}]})"));
  ASSERT_TRUE(model);
  EXPECT_FALSE(HasRegularization(*model));
  EXPECT_EQ(RegularizationPenalty(*model), 0.0);
}

TEST(ModelRegularizationTest, BadRegularizerNamesTheField) {
  auto m = Model::FromJson(json::parse(R"({"input_shape": [4], "layers": [
      {"type": "dense", "units": 3, "kernel_regularizer": "l3"}]})"), 1);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("kernel_regularizer"), std::string::npos) << m.status().ToString();
  auto c = Model::FromJson(json::parse(R"({"input_shape": [4, 4, 1], "layers": [
      {"type": "conv2d", "filters": 1, "kernel_size": 3, "bias_regularizer": {"class_name": "L2", "config": {"l2": -1}}}]})"), 1);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("bias_regularizer"), std::string::npos) << c.status().ToString();
}

TEST(ModelRegularizationTest, GradientMatchesFiniteDifferences) {
  auto model_ptr = Build(kModel);
  ASSERT_TRUE(model_ptr);
  Model& model = *model_ptr;
  // Move the zero biases off 0 (|w| has no derivative there) and away from the kinks.
  for (const ParamInfo& p : model.param_infos()) {
    if (p.name.find("bias") == std::string::npos) continue;
    for (size_t i = 0; i < p.count; ++i) model.params()[p.offset + i] = 0.05f + 0.03f * static_cast<float>(i);
  }
  const int batch = 3;
  const std::vector<float> x = testing::RandomVector(batch * model.input_size(), 5);
  const std::vector<int32_t> labels = {2, 0, 1};
  auto objective = [&]() {
    const float* logits = model.Forward(x.data(), batch, false);
    return SparseSoftmaxCrossEntropy(logits, labels.data(), batch, 3, 0, nullptr).loss_sum / batch +
           RegularizationPenalty(model);
  };
  std::vector<float> grad_logits(batch * 3);
  const float* logits = model.Forward(x.data(), batch, true);
  SparseSoftmaxCrossEntropy(logits, labels.data(), batch, 3, 1.0f / batch, grad_logits.data());
  // As the engine does: each range as Backward reports it final.
  size_t end = model.num_trainable();
  model.Backward(grad_logits.data(), [&](size_t offset) {
    AddRegularizationGradients(&model, offset, end, 1.0f);
    end = offset;
  });
  EXPECT_EQ(end, 0u);
  const std::vector<float> analytic(model.grads(), model.grads() + model.num_trainable());

  const double eps = 1e-3;
  for (const ParamInfo& info : model.param_infos()) {
    for (size_t i = 0; i < info.count; ++i) {
      float* p = model.params() + info.offset + i;
      const float saved = *p;
      *p = saved + static_cast<float>(eps);
      const double up = objective();
      *p = saved - static_cast<float>(eps);
      const double down = objective();
      *p = saved;
      const double numeric = (up - down) / (2 * eps);
      EXPECT_NEAR(analytic[info.offset + i], numeric, 2e-3 + 1e-2 * std::abs(numeric)) << info.name << "[" << i << "]";
    }
  }
}

TEST(ModelRegularizationTest, FrozenWeightsCountInThePenaltyButGetNoGradient) {
  json j = kModel;
  j["layers"][0]["trainable"] = false;  // the conv2d: its L2 kernel penalty stays in the loss
  auto model = Build(j);
  ASSERT_TRUE(model);
  const ParamInfo* frozen = nullptr;
  for (const ParamInfo& p : model->param_infos()) {
    if (p.name == "conv2d/kernel") frozen = &p;
  }
  ASSERT_NE(frozen, nullptr);
  ASSERT_FALSE(frozen->trainable);
  EXPECT_GE(frozen->offset, model->num_trainable());  // non-trainable weights follow the trainable ones
  const double frozen_penalty = frozen->regularizer.Penalty(model->params() + frozen->offset, frozen->count);
  EXPECT_GT(frozen_penalty, 0);
  double trainable_penalty = 0;
  for (const ParamInfo& p : model->param_infos()) {
    if (p.trainable) trainable_penalty += p.regularizer.Penalty(model->params() + p.offset, p.count);
  }
  EXPECT_NEAR(RegularizationPenalty(*model), frozen_penalty + trainable_penalty, 1e-12);

  // Over the whole buffer, only trainable weights get the gradient: zero gradients
  // become exactly the regularizer's.
  std::fill(model->grads(), model->grads() + model->num_trainable(), 0.0f);
  AddRegularizationGradients(model.get(), 0, model->num_params(), 1.0f);
  for (const ParamInfo& p : model->param_infos()) {
    if (!p.trainable) continue;
    for (size_t i = 0; i < p.count; ++i) {
      const float w = model->params()[p.offset + i];
      const double sign = w > 0 ? 1.0 : (w < 0 ? -1.0 : 0.0);
      EXPECT_EQ(model->grads()[p.offset + i], static_cast<float>(p.regularizer.l1() * sign + 2 * p.regularizer.l2() * w))
          << p.name << "[" << i << "]";
    }
  }
}

}  // namespace
}  // namespace ringtrain::nn
