// Keras' clipnorm / global_clipnorm / clipvalue, through the optimizers (SGD with
// learning rate 1, so the weights move by exactly the clipped gradient's float value).
#include "nn/optimizers/gradient_clip.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "kernels/kernels.h"
#include "nn/optimizers/optimizer.h"
#include "test_util.h"

namespace ringtrain::nn {
namespace {

using nlohmann::json;


// The update of plain SGD with learning rate 1 from zero weights: -clipped gradient.
std::vector<float> ClippedBySgd(const json& clip, const std::vector<float>& g,
                                const std::vector<VariableSpan>& vars = {}) {
  json config = clip;
  config["type"] = "sgd";
  config["learning_rate"] = 1.0;
  auto opt = testing::MakeOptimizer(config);
  if (!vars.empty()) opt->SetVariables(vars);
  std::vector<float> w(g.size(), 0.0f);
  opt->Apply(w.data(), g.data(), g.size());
  for (float& x : w) x = -x;
  return w;
}

// Two variables: a of norm 5 (3, 4), b of norm 0.5 (0.3, -0.4); clipnorm 1 clips a to
// (0.6, 0.8) and leaves b (Keras divides by max(norm, c) = c: g * c / c).
TEST(GradientClipTest, ClipnormIsPerVariable) {
  const std::vector<float> g = {3.0f, 4.0f, 0.3f, -0.4f};
  const auto out = ClippedBySgd(json{{"clipnorm", 1.0}}, g, {{"a", 0, 2}, {"b", 2, 2}});
  const double norm_a = 5.0;
  EXPECT_NEAR(out[0], 3.0 / norm_a, 1e-7);
  EXPECT_NEAR(out[1], 4.0 / norm_a, 1e-7);
  EXPECT_NEAR(out[2], 0.3, 1e-7);
  EXPECT_NEAR(out[3], -0.4, 1e-7);
  // Without SetVariables the buffer is one variable: norm sqrt(25.25).
  const auto whole = ClippedBySgd(json{{"clipnorm", 1.0}}, g);
  const double norm = std::sqrt(25.25);
  for (size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(whole[i], g[i] / norm, 1e-6 * std::abs(g[i] / norm)) << i;
}

TEST(GradientClipTest, GlobalClipnormScalesEverything) {
  const std::vector<float> g = {3.0f, 4.0f, 0.3f, -0.4f};
  const double norm = std::sqrt(25.25);
  const auto out = ClippedBySgd(json{{"global_clipnorm", 2.0}}, g, {{"a", 0, 2}, {"b", 2, 2}});
  for (size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(out[i], g[i] * 2.0 / norm, 1e-6 * std::abs(g[i] * 2.0 / norm)) << i;
  // Under the limit: scale = c * min(1/N, 1/c) = c * (1/c), 1 within rounding.
  const auto small = ClippedBySgd(json{{"global_clipnorm", 100.0}}, g);
  for (size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(small[i], g[i], 1e-6 * std::abs(g[i])) << i;
  // A zero gradient stays zero (1/0 = inf loses to 1/c).
  const auto zero = ClippedBySgd(json{{"global_clipnorm", 1.0}}, {0.0f, 0.0f});
  EXPECT_EQ(zero, std::vector<float>(2, 0.0f));
  // An infinite norm makes the scale NaN, as in Keras: the step is poisoned, not hidden.
  const auto inf = ClippedBySgd(json{{"global_clipnorm", 1.0}}, {std::numeric_limits<float>::infinity(), 1.0f});
  EXPECT_TRUE(std::isnan(inf[1]));
}

TEST(GradientClipTest, ClipvalueClampsElements) {
  const std::vector<float> g = {3.0f, -4.0f, 0.3f, -0.4f, 0.5f};
  const auto out = ClippedBySgd(json{{"clipvalue", 0.5}}, g);
  EXPECT_EQ(out, (std::vector<float>{0.5f, -0.5f, 0.3f, -0.4f, 0.5f}));
}

TEST(GradientClipTest, ZeroVariableUnderClipnormStaysZero) {
  const auto out = ClippedBySgd(json{{"clipnorm", 1.0}}, {0.0f, 0.0f, 2.0f}, {{"a", 0, 2}, {"b", 2, 1}});
  EXPECT_EQ(out[0], 0.0f);
  EXPECT_EQ(out[1], 0.0f);
  EXPECT_NEAR(out[2], 1.0f, 1e-7);
}

// The clipped gradient feeds the rule: Adam with clipnorm equals Adam fed the clipped
// gradient.
TEST(GradientClipTest, ClippingHappensBeforeTheRule) {
  const std::vector<float> g = {3.0f, 4.0f};
  auto clipped = testing::MakeOptimizer(json{{"type", "adam"}, {"clipnorm", 1.0}, {"learning_rate", 0.1}});
  auto plain = testing::MakeOptimizer(json{{"type", "adam"}, {"learning_rate", 0.1}});
  std::vector<float> wa = {1.0f, 1.0f}, wb = wa;
  const std::vector<float> pre = {3.0f * (1.0f / 5.0f), 4.0f * (1.0f / 5.0f)};
  std::vector<float> gc(2);
  ClipGradients(GradientClip{GradientClip::Mode::kNorm, 1.0}, {{"", 0, 2}}, g.data(), 2, gc.data());
  for (int t = 0; t < 3; ++t) {
    clipped->Apply(wa.data(), g.data(), 2);
    plain->Apply(wb.data(), gc.data(), 2);
  }
  EXPECT_EQ(std::memcmp(wa.data(), wb.data(), sizeof(float) * 2), 0);
  EXPECT_NEAR(gc[0], pre[0], 1e-7);
  // The caller's gradient is left alone.
  EXPECT_EQ(g, (std::vector<float>{3.0f, 4.0f}));
}

// Variables that do not tile the buffer are logged and count as one variable.
TEST(GradientClipTest, BadSpansFallBackToOneVariable) {
  const std::vector<float> g = {3.0f, 4.0f, 0.3f, -0.4f};
  const auto out = ClippedBySgd(json{{"clipnorm", 1.0}}, g, {{"a", 0, 2}, {"b", 3, 1}});
  const auto whole = ClippedBySgd(json{{"clipnorm", 1.0}}, g);
  EXPECT_EQ(out, whole);
}

// Norms over many blocks: the same bits on 1 and 4 threads.
TEST(GradientClipTest, SameBitsWhateverTheThreadCount) {
  const size_t n = 100000;
  std::vector<float> g(n);
  for (size_t i = 0; i < n; ++i) g[i] = std::sin(static_cast<float>(i) * 0.37f) * (1.0f + (i % 7));
  std::vector<std::vector<float>> results;
  for (int threads : {1, 4}) {
    kernels::SetNumThreads(threads);
    for (const char* mode : {"clipnorm", "global_clipnorm"}) {
      results.push_back(ClippedBySgd(json{{mode, 3.0}}, g, {{"a", 0, 70001}, {"b", 70001, n - 70001}}));
    }
  }
  kernels::SetNumThreads(1);
  EXPECT_EQ(results[0], results[2]);
  EXPECT_EQ(results[1], results[3]);
  // And the global norm is right: sum in double.
  double sum = 0;
  for (float x : g) sum += static_cast<double>(x) * x;
  EXPECT_NEAR(kernels::SumSquares(g.data(), n), sum, 1e-9 * sum);
}

}  // namespace
}  // namespace ringtrain::nn
