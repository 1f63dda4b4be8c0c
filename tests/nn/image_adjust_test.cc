// RandomBrightness and RandomContrast (nn/layers/image_adjust_layers.h), run by the CPU
// kernel: Keras 3's formulas with each example's factor read back from the draw functions
// (backends/cpu/augment_draws.h), the clip to value_range, Keras 3's reading of
// RandomContrast's factor, central-difference gradients (through the channel mean),
// determinism, inference as the identity, refusals and a Keras 3 model JSON. tfjs has
// neither layer, so the reference is Keras' code (random_brightness.py, random_contrast.py).
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "backends/cpu/augment_draws.h"
#include "cpu_run.h"
#include "nn/keras/keras_json.h"
#include "nn/layers/image_adjust_layers.h"
#include "nn/model.h"
#include "test_util.h"

namespace ringtrain::nn {
namespace {

using nlohmann::json;
using Factory = StatusOr<std::unique_ptr<Layer>> (*)(const json&, std::string, const Shape&, const std::string&);

struct Adjust : testing::CpuRun {
  Adjust(std::unique_ptr<Layer> made, const StepContext& step) : CpuRun(*made), owned(std::move(made)) { ctx = step; }
  std::unique_ptr<Layer> owned;
};

std::unique_ptr<Adjust> Make(Factory f, const json& j, const Shape& in, StepContext ctx, const std::string& name = "a") {
  auto l = f(j, name, in, "t");
  EXPECT_TRUE(l.ok()) << l.status().ToString();
  if (!l.ok()) return nullptr;
  return std::make_unique<Adjust>(std::move(l).value(), ctx);
}

const StepContext kStep{5, 2, 0, 1, nullptr};
const Shape kImg{3, 4, 2};

float FactorOf(const Adjust& l, int example) {
  Rng rng = backends::cpu::ExampleRng(l.ctx, l.node().op.key, example);
  return backends::cpu::UniformIn(rng, l.node().op.adjust_lo, l.node().op.adjust_hi);
}

TEST(ImageAdjustTest, BrightnessAddsAFractionOfTheRangeAndClips) {
  auto l = Make(&ImageAdjust::CreateBrightness, {{"factor", 0.5}, {"value_range", {0, 1}}}, kImg, kStep);
  EXPECT_EQ(l->node().op.adjust_lo, -0.5);
  EXPECT_EQ(l->node().op.adjust_hi, 0.5);
  const int batch = 4;
  std::vector<float> x(static_cast<size_t>(batch) * 24);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 24) / 23.0f;
  const float* y = l->Forward(x.data(), batch, true);
  int clipped = 0;
  for (int b = 0; b < batch; ++b) {
    const float f = FactorOf(*l, b);
    EXPECT_GE(f, -0.5f);
    EXPECT_LT(f, 0.5f);
    for (int i = 0; i < 24; ++i) {
      const size_t k = static_cast<size_t>(b) * 24 + i;
      const float t = x[k] + f * (1.0f - 0.0f);
      ASSERT_EQ(y[k], std::min(std::max(t, 0.0f), 1.0f)) << k;
      clipped += t < 0 || t > 1;
    }
  }
  EXPECT_GT(clipped, 0);
  // The gradient passes where the sum was inside the range.
  const std::vector<float> dy(x.size(), 1.0f);
  const float* dx = l->Backward(dy.data(), true);
  for (int b = 0; b < batch; ++b) {
    const float f = FactorOf(*l, b);
    for (int i = 0; i < 24; ++i) {
      const size_t k = static_cast<size_t>(b) * 24 + i;
      const float t = x[k] + f;
      ASSERT_EQ(dx[k], (t >= 0 && t <= 1) ? 1.0f : 0.0f) << k;
    }
  }
}

TEST(ImageAdjustTest, ContrastScalesAboutTheChannelMean) {
  // Keras 3: a number f gives the contrast factor range [1, 1 + f]; a list [l, u] [1 - l, 1 + u].
  auto l = Make(&ImageAdjust::CreateContrast, {{"factor", 0.5}, {"value_range", {-100, 100}}}, kImg, kStep);
  EXPECT_EQ(l->node().op.adjust_lo, 1.0);
  EXPECT_EQ(l->node().op.adjust_hi, 1.5);
  auto pair = Make(&ImageAdjust::CreateContrast, {{"factor", {0.5, 0.2}}}, kImg, kStep);
  EXPECT_EQ(pair->node().op.adjust_lo, 0.8);
  EXPECT_EQ(pair->node().op.adjust_hi, 1.5);
  const int batch = 2;
  const std::vector<float> x = testing::RandomVector(batch * 24, 3, 5.0f);
  const float* y = l->Forward(x.data(), batch, true);
  for (int b = 0; b < batch; ++b) {
    const float f = FactorOf(*l, b);
    for (int ch = 0; ch < 2; ++ch) {
      double m = 0;
      for (int p = 0; p < 12; ++p) m += x[static_cast<size_t>(b) * 24 + p * 2 + ch];
      m /= 12;
      for (int p = 0; p < 12; ++p) {
        const size_t k = static_cast<size_t>(b) * 24 + p * 2 + ch;
        EXPECT_NEAR(y[k], (x[k] - m) * f + m, 1e-5) << k;
      }
    }
  }
}

// Central differences of sum(y * r) for the input, with the step's draws fixed.
void CheckGradient(Factory f, const json& j, uint64_t seed) {
  auto l = Make(f, j, kImg, kStep);
  const int batch = 2;
  std::vector<float> x = testing::RandomVector(batch * 24, seed);
  const std::vector<float> r = testing::RandomVector(batch * 24, seed + 1);
  l->Forward(x.data(), batch, true);
  const float* d = l->Backward(r.data(), true);
  const std::vector<float> analytic(d, d + x.size());
  const double eps = 1e-3;
  for (size_t i = 0; i < x.size(); ++i) {
    const float saved = x[i];
    x[i] = saved + static_cast<float>(eps);
    const double up = testing::Dot(l->Forward(x.data(), batch, true), r);
    x[i] = saved - static_cast<float>(eps);
    const double down = testing::Dot(l->Forward(x.data(), batch, true), r);
    x[i] = saved;
    testing::ExpectClose(analytic[i], (up - down) / (2 * eps), "input[" + std::to_string(i) + "]");
  }
}

TEST(ImageAdjustTest, GradientsMatchCentralDifferences) {
  CheckGradient(&ImageAdjust::CreateBrightness, {{"factor", 0.3}, {"value_range", {-10, 10}}}, 10);
  CheckGradient(&ImageAdjust::CreateContrast, {{"factor", {0.4, 0.6}}, {"value_range", {-10, 10}}}, 20);
}

TEST(ImageAdjustTest, DeterminismAndInference) {
  const std::vector<float> x = testing::RandomVector(3 * 24, 4, 100.0f);
  for (Factory f : {&ImageAdjust::CreateBrightness, &ImageAdjust::CreateContrast}) {
    auto run = [&](StepContext c, const json& j) {
      auto l = Make(f, j, kImg, c);
      const float* y = l->Forward(x.data(), 3, true);
      return std::vector<float>(y, y + x.size());
    };
    const json j = {{"factor", 0.4}};
    const std::vector<float> a = run(kStep, j);
    EXPECT_EQ(a, run(kStep, j));
    StepContext other = kStep;
    other.step = 3;
    EXPECT_NE(a, run(other, j));
    EXPECT_NE(a, run(kStep, {{"factor", 0.4}, {"seed", 9}}));
    auto l = Make(f, j, kImg, kStep);
    EXPECT_EQ(l->Forward(x.data(), 3, false), x.data());
    const std::vector<float> dy(x.size(), 1.0f);
    EXPECT_EQ(l->Backward(dy.data(), true), dy.data());
  }
}

TEST(ImageAdjustTest, BadArgumentsAreRefused) {
  struct Bad {
    Factory f;
    json j;
    Shape in;
    const char* message;
  };
  const Bad cases[] = {
      {&ImageAdjust::CreateBrightness, json::object(), kImg, "missing 'factor'"},
      {&ImageAdjust::CreateBrightness, {{"factor", 1.5}}, kImg, "'factor'"},
      {&ImageAdjust::CreateBrightness, {{"factor", 0.1}, {"value_range", {0}}}, kImg, "'value_range' must be a list"},
      {&ImageAdjust::CreateBrightness, {{"factor", 0.1}}, Shape{12}, "RandomBrightness needs an image per example"},
      {&ImageAdjust::CreateContrast, {{"factor", -0.2}}, kImg, "'factor' must be a number in [0, 1]"},
      {&ImageAdjust::CreateContrast, {{"factor", {1.5, 2}}}, kImg, "'factor' must be a number in [0, 1]"},
      {&ImageAdjust::CreateContrast, {{"factor", 0.2}, {"seed", 1.5}}, kImg, "seed"},
      {&ImageAdjust::CreateContrast, {{"factor", 0.2}, {"alpha", 1}}, kImg, "unknown field 'alpha'"},
  };
  for (const Bad& c : cases) {
    auto l = c.f(c.j, "a", c.in, "model.layers[0] (a)");
    ASSERT_FALSE(l.ok()) << c.j.dump();
    EXPECT_NE(l.status().message().find(c.message), std::string::npos) << l.status().message();
  }
}

TEST(ImageAdjustTest, KerasJson) {
  // As Keras 3 saves them: factor as the (lower, upper) pair it holds.
  const json keras = json::parse(R"({"class_name": "Sequential", "config": {"name": "s", "layers": [
      {"class_name": "InputLayer", "config": {"batch_shape": [null, 8, 8, 3], "dtype": "float32", "name": "in"}},
      {"class_name": "RandomBrightness", "config": {"name": "random_brightness", "trainable": true,
       "dtype": "float32", "factor": [-0.2, 0.2], "value_range": [0, 255], "seed": null}},
      {"class_name": "RandomContrast", "config": {"name": "random_contrast", "trainable": true,
       "dtype": "float32", "factor": [0.0, 0.3], "value_range": [0, 255], "seed": 4}},
      {"class_name": "Flatten", "config": {"name": "flatten"}},
      {"class_name": "Dense", "config": {"name": "dense", "units": 2}}]}})");
  auto compact = KerasJsonToCompact(keras);
  ASSERT_TRUE(compact.ok()) << compact.status().ToString();
  auto m = Model::FromJson(*compact, 1);
  ASSERT_TRUE(m.ok()) << m.status().ToString() << "\n" << compact->dump();
  const std::vector<float> x = testing::RandomVector(2 * 192, 4, 100.0f);
  ASSERT_NE((*m)->Forward(x.data(), 2, true), nullptr);
  const std::vector<float> dy = {1, -1, 0.5f, 2};
  (*m)->Backward(dy.data());
}

}  // namespace
}  // namespace ringtrain::nn
