// SpatialDropout2D and GaussianNoise (nn/layers/noise_layers.h), run by the CPU kernels:
// whole channels dropped per example and scaled by 1 / (1 - rate) (Keras' noise_shape
// (batch, 1, 1, channels)); the noise's moments and its Box-Muller transform against
// libm; determinism (the same step draws the same, another step, replica, seed or layer
// others); inference and rate/stddev 0 as the identity; gradients (the mask; the
// identity); refusals; Keras JSON. TensorFlow.js has GaussianNoise, checked here in
// inference (the identity) through its Keras JSON; its training noise is TF's stream,
// which ringtrain does not reproduce bit for bit.
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "backends/cpu/augment_draws.h"
#include "backends/cpu/noise_draws.h"
#include "cpu_run.h"
#include "nn/keras/keras_json.h"
#include "nn/layers/noise_layers.h"
#include "nn/model.h"
#include "test_util.h"
#include "testing/tfjs_oracle.h"

namespace ringtrain::nn {
namespace {

using nlohmann::json;
using Factory = StatusOr<std::unique_ptr<Layer>> (*)(const json&, std::string, const Shape&, const std::string&);

struct Noisy : testing::CpuRun {
  Noisy(std::unique_ptr<Layer> made, const StepContext& step) : CpuRun(*made), owned(std::move(made)) { ctx = step; }
  std::unique_ptr<Layer> owned;
};

std::unique_ptr<Noisy> Make(Factory f, const json& j, const Shape& in, StepContext ctx, const std::string& name = "n") {
  auto l = f(j, name, in, "t");
  EXPECT_TRUE(l.ok()) << l.status().ToString();
  if (!l.ok()) return nullptr;
  return std::make_unique<Noisy>(std::move(l).value(), ctx);
}

std::vector<float> Apply(Noisy& l, const std::vector<float>& x, int batch, bool training = true) {
  const float* y = l.Forward(x.data(), batch, training);
  return y == nullptr ? std::vector<float>() : std::vector<float>(y, y + x.size());
}

const StepContext kStep{7, 3, 1, 2, nullptr};

TEST(SpatialDropoutTest, DropsWholeChannelsPerExampleAndScalesTheRest) {
  const Shape in{5, 4, 16};
  const int batch = 8;
  const std::vector<float> x(static_cast<size_t>(batch) * 5 * 4 * 16, 1.0f);
  auto l = Make(&SpatialDropout2D::Create, {{"rate", 0.5}}, in, kStep);
  const std::vector<float> y = Apply(*l, x, batch);
  const float scale = 1.0f / 0.5f;
  int dropped = 0, kept = 0;
  std::vector<int> pattern0;
  for (int b = 0; b < batch; ++b) {
    std::vector<int> pattern;
    for (int c = 0; c < 16; ++c) {
      const float v = y[static_cast<size_t>(b) * 320 + c];
      ASSERT_TRUE(v == 0.0f || v == scale) << v;
      for (int p = 0; p < 20; ++p) ASSERT_EQ(y[static_cast<size_t>(b) * 320 + p * 16 + c], v) << "b " << b << " c " << c;
      (v == 0.0f ? dropped : kept)++;
      pattern.push_back(v == 0.0f);
    }
    if (b == 0) pattern0 = pattern;
  }
  EXPECT_GT(dropped, 30);
  EXPECT_GT(kept, 30);
  // Backward: the same mask.
  const std::vector<float> dy = testing::RandomVector(x.size(), 9);
  const float* dx = l->Backward(dy.data(), true);
  for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(dx[i], dy[i] * y[i]) << i;
  EXPECT_EQ(l->Backward(dy.data(), false), nullptr);
}

TEST(SpatialDropoutTest, DeterminismInferenceAndRateZero) {
  const Shape in{3, 3, 8};
  const std::vector<float> x = testing::RandomVector(4 * 72, 1);
  auto run = [&](StepContext c, const std::string& name, const json& j = {{"rate", 0.4}}) {
    auto l = Make(&SpatialDropout2D::Create, j, in, c, name);
    return Apply(*l, x, 4);
  };
  const std::vector<float> a = run(kStep, "s");
  EXPECT_EQ(a, run(kStep, "s"));
  StepContext other = kStep;
  other.step = 4;
  EXPECT_NE(a, run(other, "s"));
  other = kStep;
  other.replica = 0;
  EXPECT_NE(a, run(other, "s"));
  EXPECT_NE(a, run(kStep, "s2"));
  EXPECT_NE(a, run(kStep, "s", {{"rate", 0.4}, {"seed", 1}}));
  EXPECT_EQ(run(kStep, "s", {{"rate", 0.0}}), x);
  auto l = Make(&SpatialDropout2D::Create, {{"rate", 0.4}}, in, kStep);
  EXPECT_EQ(l->Forward(x.data(), 4, false), x.data());  // inference passes the input through
}

TEST(GaussianNoiseTest, TheTransformIsBoxMullerAndTheNoiseIsStandardNormal) {
  // The own ln, sin and cos against libm's, over their ranges.
  for (double u : {1.0, 0.5, 0.75, 1e-3, 1e-10, 1.1102230246251565e-16, 0.999999, 0.3333}) {
    EXPECT_NEAR(backends::cpu::NoiseLog(u), std::log(u), 4e-16 * (1 + std::abs(std::log(u)))) << u;
  }
  for (int k = 0; k < 1000; ++k) {
    const double t = k / 1000.0 + 0.0003;
    double s, c;
    backends::cpu::NoiseSinCos2Pi(t, &s, &c);
    EXPECT_NEAR(s, std::sin(2 * M_PI * t), 1e-15) << t;
    EXPECT_NEAR(c, std::cos(2 * M_PI * t), 1e-15) << t;
  }
  // Moments over 200k draws.
  const int n = 200000;
  double sum = 0, sq = 0, quart = 0;
  int beyond2 = 0;
  for (int i = 0; i < n; ++i) {
    const double z = backends::cpu::GaussianDraw(12345, static_cast<uint64_t>(i));
    sum += z;
    sq += z * z;
    quart += z * z * z * z;
    beyond2 += std::abs(z) > 2;
  }
  EXPECT_NEAR(sum / n, 0.0, 0.01);
  EXPECT_NEAR(sq / n, 1.0, 0.01);
  EXPECT_NEAR(quart / n, 3.0, 0.06);
  EXPECT_NEAR(static_cast<double>(beyond2) / n, 0.0455, 0.003);
}

TEST(GaussianNoiseTest, AddsScaledNoiseInTrainingOnly) {
  const Shape in{6, 5};
  const std::vector<float> x = testing::RandomVector(3 * 30, 2);
  auto l = Make(&GaussianNoise::Create, {{"stddev", 0.25}}, in, kStep, "gn");
  const std::vector<float> y = Apply(*l, x, 3);
  // The layer's stream: DropoutStreamKey of the step and the layer (backends/cpu/augment_draws.h).
  const ops::Op& op = l->node().op;
  const uint64_t key =
      backends::cpu::DropoutStreamKey(kStep.seed, kStep.step, kStep.replica, op.name_hash, op.layer_seed);
  for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(y[i], x[i] + backends::cpu::GaussianDraw(key, i) * 0.25f) << i;
  const std::vector<float> dy = testing::RandomVector(x.size(), 3);
  EXPECT_EQ(l->Backward(dy.data(), true), dy.data());
  EXPECT_EQ(l->Forward(x.data(), 3, false), x.data());
  auto zero = Make(&GaussianNoise::Create, {{"stddev", 0}}, in, kStep);
  EXPECT_EQ(zero->Forward(x.data(), 3, true), x.data());
  // Determinism: the same step the same noise; another step, layer or seed other noise.
  auto again = Make(&GaussianNoise::Create, {{"stddev", 0.25}}, in, kStep, "gn");
  EXPECT_EQ(Apply(*again, x, 3), y);
  StepContext next = kStep;
  next.step = 4;
  auto later = Make(&GaussianNoise::Create, {{"stddev", 0.25}}, in, next, "gn");
  EXPECT_NE(Apply(*later, x, 3), y);
  auto seeded = Make(&GaussianNoise::Create, {{"stddev", 0.25}, {"seed", 5}}, in, kStep, "gn");
  EXPECT_NE(Apply(*seeded, x, 3), y);
}

TEST(NoiseLayersTest, BadArgumentsAreRefused) {
  struct Bad {
    Factory f;
    json j;
    Shape in;
    const char* message;
  };
  const Bad cases[] = {
      {&SpatialDropout2D::Create, json::object(), {4, 4, 2}, "missing 'rate'"},
      {&SpatialDropout2D::Create, {{"rate", 1.0}}, {4, 4, 2}, "'rate'"},
      {&SpatialDropout2D::Create, {{"rate", -0.1}}, {4, 4, 2}, "'rate'"},
      {&SpatialDropout2D::Create, {{"rate", 0.1}}, {16}, "SpatialDropout2D needs a [height, width, channels] input"},
      {&SpatialDropout2D::Create, {{"rate", 0.1}, {"seed", "x"}}, {4, 4, 2}, "'seed' must be an integer or null"},
      {&SpatialDropout2D::Create, {{"rate", 0.1}, {"noise_shape", {1, 1, 1, 2}}}, {4, 4, 2}, "noise_shape"},
      {&GaussianNoise::Create, json::object(), {3}, "missing 'stddev'"},
      {&GaussianNoise::Create, {{"stddev", -1}}, {3}, "'stddev'"},
      {&GaussianNoise::Create, {{"stddev", 0.1}, {"mean", 1}}, {3}, "unknown field 'mean'"},
  };
  for (const Bad& c : cases) {
    auto l = c.f(c.j, "n", c.in, "model.layers[0] (n)");
    ASSERT_FALSE(l.ok()) << c.j.dump();
    EXPECT_NE(l.status().message().find(c.message), std::string::npos) << l.status().message();
    EXPECT_EQ(l.status().message().rfind("model.layers[0] (n): ", 0), 0u) << l.status().message();
  }
}

TEST(NoiseLayersTest, KerasJsonModelTrains) {
  const json keras = json::parse(R"({"class_name": "Sequential", "config": {"name": "s", "layers": [
      {"class_name": "InputLayer", "config": {"batch_shape": [null, 6, 6, 2], "dtype": "float32", "name": "in"}},
      {"class_name": "GaussianNoise", "config": {"name": "gaussian_noise", "trainable": true, "dtype": "float32",
       "stddev": 0.1, "seed": null}},
      {"class_name": "Conv2D", "config": {"name": "conv", "filters": 4, "kernel_size": [3, 3]}},
      {"class_name": "SpatialDropout2D", "config": {"name": "spatial_dropout2d", "trainable": true,
       "dtype": "float32", "rate": 0.25, "seed": 3, "data_format": "channels_last", "noise_shape": null}},
      {"class_name": "Flatten", "config": {"name": "flatten"}},
      {"class_name": "Dense", "config": {"name": "dense", "units": 2}}]}})");
  auto compact = KerasJsonToCompact(keras);
  ASSERT_TRUE(compact.ok()) << compact.status().ToString();
  auto m = Model::FromJson(*compact, 1);
  ASSERT_TRUE(m.ok()) << m.status().ToString() << "\n" << compact->dump();
  const std::vector<float> x = testing::RandomVector(2 * 72, 4);
  const float* y = (*m)->Forward(x.data(), 2, true);
  ASSERT_NE(y, nullptr);
  const std::vector<float> dy = {1, -1, 0.5f, 2};
  (*m)->Backward(dy.data());
}

TEST(NoiseLayersTfjsTest, GaussianNoiseInferenceIsTheIdentity) {
  RT_REQUIRE_TFJS();
  using ::ringtrain::testing::AllClose;
  using ::ringtrain::testing::RunTfjs;
  using ::ringtrain::testing::TfjsTensor;
  using ::ringtrain::testing::TfjsValues;
  const json layers = {
      {{"class_name", "Dense"}, {"config", {{"name", "dense"}, {"units", 4}}}},
      {{"class_name", "GaussianNoise"}, {"config", {{"name", "gaussian_noise"}, {"stddev", 0.3}}}},
      {{"class_name", "Dense"}, {"config", {{"name", "head"}, {"units", 2}}}}};
  auto built = RunTfjs({{"kind", "build"},
                        {"inputs", {{{"name", "input"}, {"shape", {3}}}}},
                        {"layers", layers},
                        {"sequential", true}});
  ASSERT_TRUE(built.ok()) << built.status().ToString();
  auto compact = KerasJsonToCompact((*built)["model_json"]);
  ASSERT_TRUE(compact.ok()) << compact.status().ToString();
  auto m = Model::FromJson(*compact, 1);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  json weights = json::object();
  uint64_t seed = 50;
  for (const ParamInfo& p : (*m)->param_infos()) {
    const std::vector<float> w = testing::RandomVector(p.count, seed++, 0.5f);
    std::copy(w.begin(), w.end(), (*m)->params() + p.offset);
    weights[p.name] = TfjsTensor(p.shape, w);
  }
  const std::vector<float> x = testing::RandomVector(3 * 3, 60);
  auto r = RunTfjs({{"kind", "model"},
                    {"model", (*built)["model_json"]},
                    {"weights", weights},
                    {"inputs", {TfjsTensor({3, 3}, x)}},
                    {"training", false}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const std::vector<float> want = TfjsValues((*r)["outputs"][0], {3, 2});
  const float* out = (*m)->Forward(x.data(), 3, /*training=*/false);
  EXPECT_TRUE(AllClose(std::vector<float>(out, out + 6), want));
}

}  // namespace
}  // namespace ringtrain::nn
