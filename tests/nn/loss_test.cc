// Sparse softmax cross-entropy: known values, gradient properties, scaling, stability.
#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "nn/losses/loss.h"

namespace ringtrain::nn {
namespace {

TEST(LossTest, UniformLogitsGiveLogClasses) {
  const int batch = 4, classes = 10;
  std::vector<float> logits(batch * classes, 3.0f);
  std::vector<int32_t> labels = {0, 3, 9, 5};
  std::vector<float> grad(batch * classes);
  LossStats s = SparseSoftmaxCrossEntropy(logits.data(), labels.data(), batch, classes, 1.0f, grad.data());
  EXPECT_NEAR(s.loss_sum, batch * std::log(10.0), 1e-6);
  for (int i = 0; i < batch; ++i) {
    for (int c = 0; c < classes; ++c) {
      EXPECT_NEAR(grad[i * classes + c], c == labels[i] ? 0.1 - 1 : 0.1, 1e-6);
    }
  }
}

TEST(LossTest, KnownValueAccuracyAndGradientRowsSumToZero) {
  const float logits[6] = {1, 2, 3,    // label 2: argmax right
                           0, -1, 4};  // label 1: wrong
  const int32_t labels[2] = {2, 1};
  float grad[6];
  LossStats s = SparseSoftmaxCrossEntropy(logits, labels, 2, 3, 0.5f, grad);
  const double l0 = std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0)) - 3;
  const double l1 = std::log(std::exp(0.0) + std::exp(-1.0) + std::exp(4.0)) + 1;
  EXPECT_NEAR(s.loss_sum, l0 + l1, 1e-6);
  EXPECT_EQ(s.correct, 1);
  for (int i = 0; i < 2; ++i) {
    double row = 0;
    for (int c = 0; c < 3; ++c) row += grad[i * 3 + c];
    EXPECT_NEAR(row, 0.0, 1e-7);
  }
  // softmax(1,2,3)[0] = e^1 / (e^1 + e^2 + e^3), scaled by 0.5.
  EXPECT_NEAR(grad[0], 0.5 * std::exp(1.0) / (std::exp(1.0) + std::exp(2.0) + std::exp(3.0)), 1e-7);
}

TEST(LossTest, GradScaleScalesLinearlyAndNullGradIsAllowed) {
  const float logits[4] = {0.3f, -0.2f, 1.5f, 0.1f};
  const int32_t labels[2] = {1, 0};
  float g1[4], g4[4];
  LossStats a = SparseSoftmaxCrossEntropy(logits, labels, 2, 2, 1.0f, g1);
  LossStats b = SparseSoftmaxCrossEntropy(logits, labels, 2, 2, 0.25f, g4);
  LossStats c = SparseSoftmaxCrossEntropy(logits, labels, 2, 2, 1.0f, nullptr);
  EXPECT_EQ(a.loss_sum, b.loss_sum);
  EXPECT_EQ(a.loss_sum, c.loss_sum);
  EXPECT_EQ(a.correct, c.correct);
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(g4[i], 0.25f * g1[i], 1e-7);
}

TEST(LossTest, LargeLogitsAreStable) {
  const float logits[3] = {1000.0f, 0.0f, -1000.0f};
  const int32_t labels[1] = {1};
  float grad[3];
  LossStats s = SparseSoftmaxCrossEntropy(logits, labels, 1, 3, 1.0f, grad);
  EXPECT_NEAR(s.loss_sum, 1000.0, 1e-6);
  EXPECT_FLOAT_EQ(grad[0], 1.0f);
  EXPECT_FLOAT_EQ(grad[1], -1.0f);
  EXPECT_FLOAT_EQ(grad[2], 0.0f);
}

TEST(LossTest, OutOfRangeLabels) {
  const int32_t labels[3] = {0, 2, 3};
  EXPECT_TRUE(CheckLabels(labels, 2, 3).ok());
  Status st = CheckLabels(labels, 3, 3);
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find("label 3 of example 2"), std::string::npos) << st.message();
  const float logits[9] = {};
  LossStats s = SparseSoftmaxCrossEntropy(logits, labels, 3, 3, 1.0f, nullptr);
  EXPECT_TRUE(std::isnan(s.loss_sum));
}

}  // namespace
}  // namespace ringtrain::nn
