// The engine under the job's loss, metrics and regularizers (engine/objective.h): per
// loss, the CPU engine's steps are the bits of nn::Loss + nn::Model + nn::Optimizer
// driven by hand and learn a separable 2-class task; the regularization penalty joins
// the loss and its gradient the weights'; objectives that do not fit are refused.
#include "engine/objective.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "engine/engine.h"
#include "nn/model_regularization.h"
#include "store/store.h"

namespace ringtrain::engine {
namespace {

using nlohmann::json;

constexpr int kInputs = 4;

// Two classes split by the sign of x0 - x1 (with a margin), the other inputs noise.
void ObjectiveBatch(int step, int batch, float* images, int32_t* labels) {
  std::mt19937 rng(static_cast<uint32_t>(1000 + step));
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (int i = 0; i < batch; ++i) {
    float* x = images + static_cast<size_t>(i) * kInputs;
    for (int k = 0; k < kInputs; ++k) x[k] = u(rng);
    labels[i] = x[0] - x[1] > 0 ? 1 : 0;
    x[0] += labels[i] ? 0.3f : -0.3f;
  }
}

json ModelJson(int outputs, const json& kernel_regularizer = nullptr) {
  return {{"input_shape", {kInputs}},
          {"layers",
           {{{"type", "dense"}, {"units", 8}, {"activation", "relu"}, {"kernel_regularizer", kernel_regularizer}},
            {{"type", "dense"}, {"units", outputs}}}}};
}

struct LossCase {
  const char* name;
  json loss;
  json metrics;
  int outputs;
  const char* accuracy_key;  // the metric whose value must reach 0.9
};

void PrintTo(const LossCase& c, std::ostream* os) { *os << c.name; }

class EngineLossTest : public ::testing::TestWithParam<LossCase> {};

TEST_P(EngineLossTest, StepsAreTheLossDrivenByHandAndLearn) {
  const LossCase& c = GetParam();
  constexpr int kBatch = 32, kSteps = 150;
  const float scale = 1.0f / kBatch;
  auto objective = Objective::FromJson(c.loss, c.metrics, c.outputs);
  ASSERT_TRUE(objective.ok()) << objective.status().ToString();

  // By hand: nn::Loss, Model::Backward and the optimizer.
  auto hand_model = std::move(nn::Model::FromJson(ModelJson(c.outputs), 3)).value();
  auto hand_opt = std::move(nn::Optimizer::FromJson({{"type", "sgd"}, {"learning_rate", 0.1}})).value();
  auto hand_loss = std::move(nn::Loss::FromJson(c.loss, c.outputs)).value();
  std::vector<float> images(kBatch * kInputs), grad(static_cast<size_t>(kBatch) * c.outputs);
  std::vector<int32_t> labels(kBatch);
  std::vector<double> hand_losses;
  for (int s = 0; s < kSteps; ++s) {
    ObjectiveBatch(s, kBatch, images.data(), labels.data());
    const float* out = hand_model->Forward(images.data(), kBatch, true);
    hand_losses.push_back(hand_loss->Compute(out, labels.data(), kBatch, scale, grad.data()));
    hand_model->Backward(grad.data());
    hand_opt->Apply(hand_model->params(), hand_model->grads(), hand_model->num_trainable());
  }

  auto model = std::move(nn::Model::FromJson(ModelJson(c.outputs), 3)).value();
  auto opt = std::move(nn::Optimizer::FromJson({{"type", "sgd"}, {"learning_rate", 0.1}})).value();
  auto engine = NewCpuEngine(model.get(), opt.get(), kBatch);
  ASSERT_TRUE(engine->SetObjective(&*objective).ok());
  store::InMemoryStore store;
  auto comm = collective::CreateCommunicator(collective::CommunicatorOptions{}, 0, 1, &store);
  ASSERT_TRUE(comm.ok()) << comm.status().ToString();
  engine->GradientBuffer(**comm);
  std::vector<double> last_sums;
  for (int s = 0; s < kSteps; ++s) {
    ObjectiveBatch(s, kBatch, engine->next_images(), engine->next_labels());
    ASSERT_TRUE(engine->SubmitBatch(kBatch).ok());
    ASSERT_TRUE(engine->StartStep(scale).ok());
    auto stats = engine->FinishBackward(nullptr);
    ASSERT_TRUE(stats.ok()) << stats.status().ToString();
    EXPECT_EQ(stats->loss_sum, hand_losses[static_cast<size_t>(s)]) << "step " << s;
    ASSERT_EQ(stats->metric_sums.size(), static_cast<size_t>(objective->num_sums()));
    ASSERT_TRUE(engine->ApplyUpdate().ok());
  }
  EXPECT_EQ(0, std::memcmp(model->params(), hand_model->params(), model->num_params() * sizeof(float)));
  EXPECT_LT(hand_losses.back(), 0.6 * hand_losses.front()) << "the loss went down";

  // Evaluation on fresh data: the metrics' values, and the loss's.
  constexpr int kEval = 200;
  std::vector<float> eval_images(kEval * kInputs);
  std::vector<int32_t> eval_labels(kEval);
  ObjectiveBatch(9999, kEval, eval_images.data(), eval_labels.data());
  auto eval = engine->Evaluate(eval_images.data(), eval_labels.data(), kEval);
  ASSERT_TRUE(eval.ok());
  const float* out = hand_model->Forward(eval_images.data(), kEval, false);
  EXPECT_EQ(eval->loss_sum, hand_loss->Compute(out, eval_labels.data(), kEval, 0.0f, nullptr));
  const std::vector<double> values = objective->Results(eval->metric_sums.data());
  bool found = false;
  for (size_t m = 0; m < values.size(); ++m) {
    if (objective->metrics()[m]->name() != c.accuracy_key) continue;
    found = true;
    EXPECT_GE(values[m], 0.9) << c.accuracy_key;
  }
  EXPECT_TRUE(found) << c.accuracy_key;
}

INSTANTIATE_TEST_SUITE_P(
    Losses, EngineLossTest,
    ::testing::Values(
        LossCase{"BinaryCrossentropyOneLogit", {{"type", "binary_crossentropy"}, {"from_logits", true}},
                 {{{"type", "binary_accuracy"}, {"threshold", 0}}, "auc"}, 1, "binary_accuracy"},
        LossCase{"BinaryCrossentropyKerasObject",
                 {{"class_name", "BinaryCrossentropy"}, {"config", {{"from_logits", true}, {"label_smoothing", 0.1}}}},
                 {{{"type", "binary_accuracy"}, {"threshold", 0}}}, 1, "binary_accuracy"},
        LossCase{"MeanSquaredErrorOneOutput", "mse", {"accuracy"}, 1, "accuracy"},
        LossCase{"MeanSquaredErrorOneHot", "mean_squared_error", {"accuracy"}, 2, "accuracy"},
        LossCase{"MeanAbsoluteErrorOneOutput", "mae", {"accuracy"}, 1, "accuracy"},
        LossCase{"SparseCategoricalFromLogits", {{"type", "sparse_categorical_crossentropy"}, {"from_logits", true}},
                 {"accuracy", {{"type", "sparse_top_k_categorical_accuracy"}, {"k", 1}}}, 2, "accuracy"},
        LossCase{"CategoricalFromLogitsSmoothed",
                 {{"type", "categorical_crossentropy"}, {"from_logits", true}, {"label_smoothing", 0.1}},
                 {"categorical_accuracy"}, 2, "categorical_accuracy"}),
    [](const ::testing::TestParamInfo<LossCase>& info) { return std::string(info.param.name); });

TEST(EngineRegularizationTest, PenaltyJoinsTheLossAndItsGradientTheWeights) {
  constexpr int kBatch = 16;
  const float scale = 1.0f / kBatch;
  const json l2 = {{"class_name", "L2"}, {"config", {{"l2", 0.02}}}};
  auto objective = Objective::FromJson({{"type", "sparse_categorical_crossentropy"}, {"from_logits", true}},
                                       json::array({"accuracy"}), 2);
  ASSERT_TRUE(objective.ok());
  auto hand = std::move(nn::Model::FromJson(ModelJson(2, l2), 5)).value();
  auto model = std::move(nn::Model::FromJson(ModelJson(2, l2), 5)).value();
  auto opt = std::move(nn::Optimizer::FromJson({{"type", "sgd"}, {"learning_rate", 0.1}})).value();
  auto engine = NewCpuEngine(model.get(), opt.get(), kBatch);
  ASSERT_TRUE(engine->SetObjective(&*objective).ok());
  store::InMemoryStore store;
  auto comm = collective::CreateCommunicator(collective::CommunicatorOptions{}, 0, 1, &store);
  ASSERT_TRUE(comm.ok());
  engine->GradientBuffer(**comm);
  ObjectiveBatch(0, kBatch, engine->next_images(), engine->next_labels());
  std::vector<float> images(engine->next_images(), engine->next_images() + kBatch * kInputs);
  std::vector<int32_t> labels(engine->next_labels(), engine->next_labels() + kBatch);
  ASSERT_TRUE(engine->SubmitBatch(kBatch).ok());
  ASSERT_TRUE(engine->StartStep(scale).ok());
  std::vector<size_t> ready;
  auto stats = engine->FinishBackward([&](size_t offset) { ready.push_back(offset); });
  ASSERT_TRUE(stats.ok());
  ASSERT_FALSE(ready.empty());
  EXPECT_EQ(ready.back(), 0u);

  std::vector<float> grad(kBatch * 2);
  const float* out = hand->Forward(images.data(), kBatch, true);
  const double data_loss = objective->loss().Compute(out, labels.data(), kBatch, scale, grad.data());
  const double penalty = nn::RegularizationPenalty(*hand);
  EXPECT_GT(penalty, 0);
  EXPECT_EQ(stats->loss_sum, data_loss + kBatch * penalty);
  hand->Backward(grad.data());
  nn::AddRegularizationGradients(hand.get(), 0, hand->num_trainable(), 1.0f);
  EXPECT_EQ(0, std::memcmp(model->grads(), hand->grads(), model->num_trainable() * sizeof(float)));
  // The kernel's gradient differs from the unregularized one by 2 * l2 * w.
  const nn::ParamInfo& kernel = model->param_infos()[0];
  ASSERT_EQ(kernel.name, "dense/kernel");
  EXPECT_EQ(kernel.regularizer.l2(), 0.02);
}

TEST(ObjectiveTest, SumsAreLaidOutMetricByMetric) {
  auto o = Objective::FromJson("binary_crossentropy", json::array({"accuracy", "auc"}), 1);
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  ASSERT_EQ(o->metrics().size(), 2u);
  EXPECT_EQ(o->metrics()[0]->name(), "accuracy");
  EXPECT_EQ(o->metrics()[1]->name(), "auc");
  EXPECT_EQ(o->first_sum(0), 0);
  EXPECT_EQ(o->first_sum(1), o->metrics()[0]->num_sums());
  EXPECT_EQ(o->num_sums(), o->metrics()[0]->num_sums() + o->metrics()[1]->num_sums());
  EXPECT_FALSE(o->softmax_cross_entropy_from_logits());
  EXPECT_FALSE(o->argmax_accuracy(0)) << "one output: binary_accuracy";

  auto d = Objective::Default(10);
  EXPECT_TRUE(d.softmax_cross_entropy_from_logits());
  EXPECT_TRUE(d.argmax_accuracy(0));
  EXPECT_EQ(d.metrics()[0]->name(), "accuracy");
  auto c = Objective::FromJson({{"type", "categorical_crossentropy"}, {"from_logits", true}},
                               json::array({"acc", "top_k_categorical_accuracy"}), 10);
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c->softmax_cross_entropy_from_logits());
  EXPECT_TRUE(c->argmax_accuracy(0));
  EXPECT_FALSE(c->argmax_accuracy(1));
}

TEST(ObjectiveTest, WhatDoesNotFitTheModelIsRefusedNamingTheField) {
  auto a = Objective::FromJson("sparse_categorical_crossentropy", json::array({"accuracy"}), 1);
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.status().subject(), Subject::kConfig);
  EXPECT_EQ(a.status().message().rfind("loss", 0), 0u) << a.status().message();
  auto b = Objective::FromJson("binary_crossentropy", json::array({"accuracy", "auc"}), 3);
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().message().rfind("metrics[1]", 0), 0u) << b.status().message();

  // An engine refuses an objective made for another output size.
  auto model = std::move(nn::Model::FromJson(ModelJson(2), 1)).value();
  auto opt = std::move(nn::Optimizer::FromJson({{"type", "sgd"}})).value();
  auto engine = NewCpuEngine(model.get(), opt.get(), 4);
  auto three = Objective::FromJson("mse", json::array({"accuracy"}), 3);
  ASSERT_TRUE(three.ok());
  EXPECT_EQ(engine->SetObjective(&*three).code(), Code::kInvalidArgument);
}

// A per-position output (a (2, 2, 3) map): the loss of an example is the mean over its
// 4 positions of the row loss, as Keras' sum_over_batch_size divides by batch * h * w; the
// gradient is the rows' scaled by 1/4; the metrics count positions.
TEST(ObjectiveTest, PerPositionOutputsAverageTheLossOverPositions) {
  constexpr int kBatch = 2, kPositions = 4, kClasses = 3;
  auto o = Objective::FromJson({{"type", "sparse_categorical_crossentropy"}, {"from_logits", true}},
                               json::array({"accuracy", {{"type", "mean_iou"}, {"num_classes", kClasses}}}), kClasses,
                               kPositions);
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->positions(), 4u);
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  std::vector<float> logits(kBatch * kPositions * kClasses);
  for (float& v : logits) v = u(rng);
  const std::vector<int32_t> labels = {0, 1, 2, 0, 2, 2, 1, 0};
  std::vector<float> grad(logits.size()), row_grad(logits.size());
  const float scale = 0.5f;
  const double sum = o->LossSum(logits.data(), labels.data(), kBatch, scale, grad.data());
  double want = 0;
  for (int r = 0; r < kBatch * kPositions; ++r) {
    const float* z = logits.data() + r * kClasses;
    const double m = std::max({z[0], z[1], z[2]});
    const double lse = m + std::log(std::exp(z[0] - m) + std::exp(z[1] - m) + std::exp(z[2] - m));
    want += lse - z[labels[static_cast<size_t>(r)]];
    for (int c = 0; c < kClasses; ++c) {
      const double p = std::exp(z[c] - lse);
      row_grad[static_cast<size_t>(r * kClasses + c)] =
          static_cast<float>((p - (c == labels[static_cast<size_t>(r)])) * scale / kPositions);
    }
  }
  EXPECT_NEAR(sum, want / kPositions, 1e-5);
  for (size_t i = 0; i < grad.size(); ++i) EXPECT_NEAR(grad[i], row_grad[i], 1e-6) << i;
  std::vector<double> sums(static_cast<size_t>(o->num_sums()), 0.0);
  o->Accumulate(logits.data(), labels.data(), kBatch, sums.data());
  int correct = 0;
  for (int r = 0; r < kBatch * kPositions; ++r) {
    const float* z = logits.data() + r * kClasses;
    const int arg = static_cast<int>(std::max_element(z, z + kClasses) - z);
    correct += arg == labels[static_cast<size_t>(r)];
  }
  EXPECT_DOUBLE_EQ(o->Results(sums.data())[0], static_cast<double>(correct) / (kBatch * kPositions));
}

// A model whose last layer is a map: its classes are the last axis, its positions the rest,
// and the CPU engine's buffers and objective take one label per position.
TEST(ObjectiveTest, AMapOutputTrainsOnOneLabelPerPosition) {
  const json model_json = {{"input_shape", {4, 4, 1}},
                           {"layers", {{{"type", "conv2d"}, {"filters", 3}, {"kernel_size", 3}, {"padding", "same"}}}}};
  auto model = nn::Model::FromJson(model_json, 1);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  EXPECT_EQ((*model)->num_classes(), 3);
  EXPECT_EQ((*model)->output_positions(), 16u);
  EXPECT_EQ((*model)->output_size(), 48u);
  auto opt = nn::Optimizer::FromJson({{"type", "sgd"}, {"learning_rate", 0.5}});
  ASSERT_TRUE(opt.ok());
  auto engine = NewCpuEngine(model->get(), opt->get(), 2);
  auto o = Objective::FromJson({{"type", "sparse_categorical_crossentropy"}, {"from_logits", true}},
                               json::array({"accuracy"}), 3, 16);
  ASSERT_TRUE(o.ok());
  ASSERT_TRUE(engine->SetObjective(&*o).ok());
  auto wrong = Objective::FromJson({{"type", "sparse_categorical_crossentropy"}, {"from_logits", true}},
                                   json::array({"accuracy"}), 3, 1);
  ASSERT_TRUE(wrong.ok());
  EXPECT_EQ(engine->SetObjective(&*wrong).code(), Code::kInvalidArgument);
  store::InMemoryStore store;
  auto comm = collective::CreateCommunicator(collective::CommunicatorOptions{}, 0, 1, &store);
  ASSERT_TRUE(comm.ok());
  engine->GradientBuffer(**comm);
  // Class of a pixel: 2 where the input is bright, else 0 (a per-pixel rule a 3x3 conv learns).
  double first = 0, last = 0;
  for (int step = 0; step < 40; ++step) {
    std::mt19937 rng(static_cast<uint32_t>(step));
    std::uniform_real_distribution<float> u(0.0f, 1.0f);
    for (int k = 0; k < 2 * 16; ++k) {
      engine->next_images()[k] = u(rng);
      engine->next_labels()[k] = engine->next_images()[k] > 0.5f ? 2 : 0;
    }
    ASSERT_TRUE(engine->SubmitBatch(2).ok());
    ASSERT_TRUE(engine->StartStep(0.5f).ok());
    auto s = engine->FinishBackward(nullptr);
    ASSERT_TRUE(s.ok());
    ASSERT_TRUE((*comm)->AllReduce(engine->GradientBuffer(**comm), (*model)->num_reduced(),
                                   collective::ReduceOp::kSum).ok());
    ASSERT_TRUE(engine->ApplyUpdate().ok());
    (step == 0 ? first : last) = s->loss_sum / 2;
  }
  EXPECT_LT(last, 0.5 * first) << first << " -> " << last;
}

// Targets per output value (multi-hot): one-output rows, one per value, so that an
// example's binary cross-entropy is the mean over its values, as Keras reduces the last axis.
TEST(ObjectiveTest, MultiHotTargetsAreBinaryCrossentropyMeanOverValues) {
  auto o = Objective::FromJson("binary_crossentropy", json::array({"accuracy"}), 1, 4);
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  const std::vector<float> p = {0.9f, 0.2f, 0.6f, 0.1f, 0.3f, 0.8f, 0.4f, 0.7f};
  const std::vector<int32_t> t = {1, 0, 0, 0, 1, 1, 0, 1};
  std::vector<float> grad(p.size());
  const double sum = o->LossSum(p.data(), t.data(), 2, 1.0f, grad.data());
  double want = 0;
  int right = 0;
  for (size_t k = 0; k < p.size(); ++k) {
    want -= t[k] ? std::log(static_cast<double>(p[k])) : std::log(1.0 - p[k]);
    right += (p[k] > 0.5f) == (t[k] == 1);
  }
  EXPECT_NEAR(sum, want / 4, 1e-6);
  for (size_t k = 0; k < p.size(); ++k) {  // d/dp of the mean over 4 values
    const double d = t[k] ? -1.0 / p[k] : 1.0 / (1.0 - p[k]);
    EXPECT_NEAR(grad[k], d / 4, 1e-5) << k;
  }
  std::vector<double> sums(static_cast<size_t>(o->num_sums()), 0.0);
  o->Accumulate(p.data(), t.data(), 2, sums.data());
  EXPECT_DOUBLE_EQ(o->Results(sums.data())[0], right / 8.0);  // binary accuracy over every value
}

}  // namespace
}  // namespace ringtrain::engine
