// EvaluateModel and Predict against values worked out by hand, and their agreement.
#include "inference/evaluate.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include <nlohmann/json.hpp>

namespace ringtrain::inference {
namespace {

// logits = input: a dense layer of 3 units with an identity kernel and zero bias.
std::unique_ptr<nn::Model> IdentityModel() {
  auto m = nn::Model::FromJson(nlohmann::json::parse(R"({"input_shape": [3], "layers": [
      {"type": "dense", "units": 3}]})"),
                               1);
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  nn::Model* model = m->get();
  std::fill(model->params(), model->params() + model->num_params(), 0.0f);
  for (const auto& p : model->param_infos()) {
    if (p.name == "dense/kernel") {
      for (int i = 0; i < 3; ++i) model->params()[p.offset + i * 3 + i] = 1.0f;
    }
  }
  return std::move(m).value();
}

data::Dataset Data(std::vector<std::vector<float>> rows, std::vector<int32_t> labels) {
  data::Dataset d;
  d.example_shape = {3};
  d.example_size = 3;
  d.num_classes = 3;
  for (const auto& r : rows) d.images.insert(d.images.end(), r.begin(), r.end());
  d.labels = std::move(labels);
  return d;
}

double LogSumExp(double a, double b, double c) { return std::log(std::exp(a) + std::exp(b) + std::exp(c)); }

TEST(EvaluateTest, LossAndAccuracyAsWorkedOutByHand) {
  auto model = IdentityModel();
  // Example 0: uniform logits, so -log(1/3); argmax ties to class 0 = label: correct.
  // Example 1: logits (2, 0, 1), label 2: wrong.  Example 2: (0, 3, 0), label 1: right.
  data::Dataset d = Data({{0, 0, 0}, {2, 0, 1}, {0, 3, 0}}, {0, 2, 1});
  const double expected_loss =
      (std::log(3.0) + (LogSumExp(2, 0, 1) - 1.0) + (LogSumExp(0, 3, 0) - 3.0)) / 3.0;
  for (int batch : {1, 2, 3, 64}) {
    auto r = EvaluateModel(model.get(), d, batch);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->examples, 3);
    EXPECT_NEAR(r->loss, expected_loss, 1e-12) << "batch " << batch;
    EXPECT_DOUBLE_EQ(r->accuracy, 2.0 / 3.0) << "batch " << batch;
  }
}

// The job's loss and metrics, and the regularization penalty in the loss (Keras).
TEST(EvaluateTest, TheJobsLossMetricsAndRegularization) {
  auto m = nn::Model::FromJson(nlohmann::json::parse(R"({"input_shape": [3], "layers": [
      {"type": "dense", "units": 1, "kernel_regularizer": {"class_name": "L2", "config": {"l2": 0.5}}}]})"),
                               1);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  nn::Model* model = m->get();
  // output = x0 - x1 (kernel [1, -1, 0], bias 0): penalty 0.5 * (1 + 1) = 1.
  std::fill(model->params(), model->params() + model->num_params(), 0.0f);
  model->params()[model->param_infos()[0].offset] = 1.0f;
  model->params()[model->param_infos()[0].offset + 1] = -1.0f;
  data::Dataset d = Data({{2, 0, 0}, {0, 1, 0}, {0, 3, 0}, {1, 2, 0}}, {1, 0, 1, 0});
  d.num_classes = 2;
  const nlohmann::json loss = {{"type", "binary_crossentropy"}, {"from_logits", true}};
  const nlohmann::json metrics = {{{"type", "binary_accuracy"}, {"threshold", 0}}, "auc"};
  auto r = EvaluateModel(model, d, 3, loss, metrics);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  // Logits 2, -1, -3, -1 with labels 1, 0, 1, 0: BCE = log(1 + exp(-z)) for label 1, log(1 + exp(z)) for 0.
  const double bce = (std::log1p(std::exp(-2.0)) + std::log1p(std::exp(-1.0)) + std::log1p(std::exp(3.0)) +
                      std::log1p(std::exp(-1.0))) / 4.0;
  EXPECT_NEAR(r->loss, bce + 1.0, 1e-6);
  ASSERT_EQ(r->metrics.size(), 2u);
  EXPECT_EQ(r->metrics[0].first, "binary_accuracy");
  EXPECT_DOUBLE_EQ(r->metrics[0].second, 0.75);
  EXPECT_EQ(r->metrics[1].first, "auc");
  EXPECT_EQ(r->accuracy, 0.0) << "no metric named accuracy";
  // A label binary cross-entropy cannot take, and a loss that does not fit the model.
  data::Dataset bad = Data({{2, 0, 0}}, {2});
  EXPECT_EQ(EvaluateModel(model, bad, 3, loss, metrics).status().code(), Code::kInvalidArgument);
  auto refused = EvaluateModel(model, d, 3, "sparse_categorical_crossentropy", nlohmann::json::array());
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().message().rfind("loss", 0), 0u) << refused.status().message();
}

TEST(EvaluateTest, TheSameInputsGiveTheSameBits) {
  auto m = nn::Model::FromJson(nlohmann::json::parse(R"({"input_shape": [6, 6], "layers": [
      {"type": "flatten"}, {"type": "dense", "units": 7, "activation": "relu"}, {"type": "dense", "units": 4}]})"),
                               5);
  ASSERT_TRUE(m.ok());
  data::Dataset d;
  d.example_shape = {6, 6};
  d.example_size = 36;
  d.num_classes = 4;
  for (int i = 0; i < 50 * 36; ++i) d.images.push_back(static_cast<float>((i * 13) % 29) / 29.0f);
  for (int i = 0; i < 50; ++i) d.labels.push_back(i % 4);
  auto a = EvaluateModel(m->get(), d, 8);
  auto b = EvaluateModel(m->get(), d, 8);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(std::memcmp(&a->loss, &b->loss, sizeof(double)), 0);
  EXPECT_EQ(a->accuracy, b->accuracy);

  // Predict over the same batches agrees with the evaluation's accuracy and loss.
  std::vector<Prediction> p = Predict(m->get(), d.images.data(), d.size(), 8);
  ASSERT_EQ(p.size(), d.size());
  double loss = 0;
  int correct = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    loss -= std::log(p[i].probabilities[static_cast<size_t>(d.labels[i])]);
    correct += p[i].predicted_class == d.labels[i] ? 1 : 0;
  }
  EXPECT_NEAR(loss / 50.0, a->loss, 1e-9);
  EXPECT_DOUBLE_EQ(correct / 50.0, a->accuracy);
}

TEST(EvaluateTest, BadInputsAreInvalidArguments) {
  auto model = IdentityModel();
  data::Dataset d = Data({{0, 0, 0}}, {0});
  EXPECT_EQ(EvaluateModel(model.get(), d, 0).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(EvaluateModel(model.get(), Data({}, {}), 4).status().code(), Code::kInvalidArgument);

  data::Dataset wide = d;
  wide.example_size = 4;
  wide.images.push_back(0);
  auto r = EvaluateModel(model.get(), wide, 4);
  ASSERT_EQ(r.status().code(), Code::kInvalidArgument);
  EXPECT_NE(r.status().message().find("4 values but the model's input_shape needs 3"), std::string::npos)
      << r.status().message();

  data::Dataset bad_label = Data({{0, 0, 0}, {1, 1, 1}}, {0, 3});
  r = EvaluateModel(model.get(), bad_label, 4);
  ASSERT_EQ(r.status().code(), Code::kInvalidArgument);
  EXPECT_NE(r.status().message().find("label 3 of example 1"), std::string::npos) << r.status().message();
}

TEST(PredictTest, SoftmaxInDoubleAndArgmaxTiesToTheFirstClass) {
  auto model = IdentityModel();
  const std::vector<float> x = {1, 1, 0, /**/ -1, 2, 0.5f, /**/ 0, 0, 0, /**/ 100, -100, 0};
  for (int batch : {1, 3, 4}) {
    std::vector<Prediction> p = Predict(model.get(), x.data(), 4, batch);
    ASSERT_EQ(p.size(), 4u);
    EXPECT_EQ(p[0].predicted_class, 0);  // a tie between 0 and 1
    const double e = std::exp(1.0);
    EXPECT_NEAR(p[0].probability, e / (2 * e + 1), 1e-15);
    EXPECT_NEAR(p[0].probabilities[2], 1 / (2 * e + 1), 1e-15);
    EXPECT_EQ(p[1].predicted_class, 1);
    EXPECT_NEAR(p[1].probability, std::exp(2.0) / (std::exp(-1.0) + std::exp(2.0) + std::exp(0.5)), 1e-15);
    EXPECT_EQ(p[2].predicted_class, 0);
    EXPECT_NEAR(p[2].probability, 1.0 / 3.0, 1e-15);
    EXPECT_EQ(p[3].predicted_class, 0);
    EXPECT_EQ(p[3].probability, 1.0 / (1.0 + std::exp(-100.0) + std::exp(-200.0)));
    EXPECT_GT(p[3].probabilities[1], 0.0);  // exp(-200) survives in double
    for (const auto& q : p) {
      ASSERT_EQ(q.probabilities.size(), 3u);
      EXPECT_NEAR(q.probabilities[0] + q.probabilities[1] + q.probabilities[2], 1.0, 1e-15);
    }
  }
  EXPECT_TRUE(Predict(model.get(), x.data(), 0, 4).empty());
}

// The job's loss says what the outputs are: probabilities (a softmax output) are used as
// they are, not put through a second softmax; binary cross-entropy reads one output as
// P(class 1) (a sigmoid of it from logits); a regression loss has no class.
TEST(PredictTest, ReadsTheOutputsAsTheJobsLossSays) {
  auto model = IdentityModel();
  const std::vector<float> x = {0.2f, 0.5f, 0.3f};
  auto probs = Predict(model.get(), x.data(), 1, 1, nlohmann::json("sparse_categorical_crossentropy"));
  ASSERT_TRUE(probs.ok()) << probs.status().ToString();
  EXPECT_EQ((*probs)[0].predicted_class, 1);
  EXPECT_EQ((*probs)[0].probability, static_cast<double>(0.5f));
  EXPECT_EQ((*probs)[0].probabilities[2], static_cast<double>(0.3f));

  auto mse = Predict(model.get(), x.data(), 1, 1, nlohmann::json("mse"));
  ASSERT_TRUE(mse.ok());
  EXPECT_FALSE((*mse)[0].has_class);
  EXPECT_EQ((*mse)[0].outputs, x);

  auto one = nn::Model::FromJson(nlohmann::json::parse(R"({"input_shape": [1], "layers": [
      {"type": "dense", "units": 1, "kernel_initializer": "ones"}]})"),
                                 1);
  ASSERT_TRUE(one.ok());
  const std::vector<float> z = {2.0f, -0.5f, 0.25f};
  auto logits = Predict(one->get(), z.data(), 3, 2,
                        nlohmann::json{{"type", "binary_crossentropy"}, {"from_logits", true}});
  ASSERT_TRUE(logits.ok()) << logits.status().ToString();
  EXPECT_EQ((*logits)[0].predicted_class, 1);
  EXPECT_NEAR((*logits)[0].probability, 1 / (1 + std::exp(-2.0)), 1e-15);
  EXPECT_EQ((*logits)[1].predicted_class, 0);
  EXPECT_NEAR((*logits)[1].probability, 1 - 1 / (1 + std::exp(0.5)), 1e-15);
  auto probability = Predict(one->get(), z.data(), 3, 2, nlohmann::json("binary_crossentropy"));
  ASSERT_TRUE(probability.ok());
  EXPECT_EQ((*probability)[2].predicted_class, 0);  // 0.25 <= 0.5
  EXPECT_EQ((*probability)[2].probabilities, (std::vector<double>{0.75, 0.25}));

  // A class loss on one output does not fit the model.
  EXPECT_EQ(Predict(one->get(), z.data(), 1, 1, nlohmann::json("sparse_categorical_crossentropy")).status().code(),
            Code::kInvalidArgument);
}

}  // namespace
}  // namespace ringtrain::inference
