// RandomZoom (nn/layers/random_zoom.h), run by the CPU kernel: Keras 3's zoom matrix
// sampled by the projective sampler (backends/cpu/image_transform.h, checked against TF's
// kernel in image_transform_test.cc), zero factors as the exact identity, a fixed zoom's
// pixels by hand, Backward as the adjoint, determinism, inference, refusals and a Keras 3
// model JSON. tfjs has no RandomZoom, so the reference is Keras' random_zoom.py.
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cpu_run.h"
#include "nn/keras/keras_json.h"
#include "nn/layers/random_zoom.h"
#include "nn/model.h"
#include "test_util.h"

namespace ringtrain::nn {
namespace {

using nlohmann::json;

struct Zoom : testing::CpuRun {
  Zoom(std::unique_ptr<Layer> made, const StepContext& step) : CpuRun(*made), owned(std::move(made)) { ctx = step; }
  std::unique_ptr<Layer> owned;
};

std::unique_ptr<Zoom> Make(const json& j, const Shape& in, StepContext ctx, const std::string& name = "zoom") {
  auto l = RandomZoom::Create(j, name, in, "t");
  EXPECT_TRUE(l.ok()) << l.status().ToString();
  if (!l.ok()) return nullptr;
  return std::make_unique<Zoom>(std::move(l).value(), ctx);
}

std::vector<float> Apply(Zoom& l, const std::vector<float>& x, int batch, bool training = true) {
  const float* y = l.Forward(x.data(), batch, training);
  return std::vector<float>(y, y + x.size());
}

const StepContext kStep{3, 4, 1, 2, nullptr};

TEST(RandomZoomTest, ZeroFactorIsTheExactIdentity) {
  const std::vector<float> x = testing::RandomVector(2 * 6 * 5 * 3, 1);
  auto l = Make({{"height_factor", 0.0}}, {6, 5, 3}, kStep);
  EXPECT_EQ(Apply(*l, x, 2), x);
}

TEST(RandomZoomTest, AFixedZoomInSamplesTheCentre) {
  // height_factor [-0.5, -0.5]: hz = wz = 0.5 (zoom in 2x) about the centre; nearest
  // interpolation. Output (y, x) reads input (0.5 y + (H - 1) / 4, 0.5 x + (W - 1) / 4),
  // rounded half away from zero.
  const int h = 5, w = 9;
  std::vector<float> x(static_cast<size_t>(h * w));
  for (int i = 0; i < h * w; ++i) x[i] = static_cast<float>(i);
  auto l = Make({{"height_factor", {-0.5, -0.5}}, {"interpolation", "nearest"}}, {h, w, 1}, kStep);
  const std::vector<float> y = Apply(*l, x, 1);
  for (int oy = 0; oy < h; ++oy) {
    for (int ox = 0; ox < w; ++ox) {
      const int iy = static_cast<int>(std::round(0.5f * oy + (h - 1) / 2.0f * 0.5f));
      const int ix = static_cast<int>(std::round(0.5f * ox + (w - 1) / 2.0f * 0.5f));
      EXPECT_EQ(y[oy * w + ox], x[iy * w + ix]) << oy << "," << ox;
    }
  }
  // width_factor given separately: width 1x (factor 0) keeps the columns.
  auto tall = Make({{"height_factor", {-0.5, -0.5}}, {"width_factor", 0.0}, {"interpolation", "nearest"}}, {h, w, 1},
                   kStep);
  const std::vector<float> t = Apply(*tall, x, 1);
  for (int oy = 0; oy < h; ++oy) {
    const int iy = static_cast<int>(std::round(0.5f * oy + (h - 1) / 2.0f * 0.5f));
    for (int ox = 0; ox < w; ++ox) EXPECT_EQ(t[oy * w + ox], x[iy * w + ox]) << oy << "," << ox;
  }
}

TEST(RandomZoomTest, BackwardIsTheAdjoint) {
  for (const json& j : {json{{"height_factor", 0.4}}, json{{"height_factor", {-0.3, 0.2}}, {"width_factor", 0.5},
                                                          {"fill_mode", "constant"}}}) {
    auto l = Make(j, {6, 7, 2}, kStep);
    const int batch = 3;
    const std::vector<float> x = testing::RandomVector(batch * 84, 5), r = testing::RandomVector(batch * 84, 6);
    const std::vector<float> tx = Apply(*l, x, batch);
    const float* ttr = l->Backward(r.data(), true);
    double lhs = 0, rhs = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      lhs += static_cast<double>(tx[i]) * r[i];
      rhs += static_cast<double>(x[i]) * ttr[i];
    }
    EXPECT_NEAR(lhs, rhs, 1e-4 * (1 + std::abs(lhs))) << j.dump();
  }
}

TEST(RandomZoomTest, DeterminismAndInference) {
  const std::vector<float> x = testing::RandomVector(3 * 6 * 6 * 2, 7);
  const json j = {{"height_factor", 0.3}};
  auto a = Make(j, {6, 6, 2}, kStep);
  const std::vector<float> ya = Apply(*a, x, 3);
  auto b = Make(j, {6, 6, 2}, kStep);
  EXPECT_EQ(Apply(*b, x, 3), ya);
  StepContext next = kStep;
  next.step = 5;
  auto c = Make(j, {6, 6, 2}, next);
  EXPECT_NE(Apply(*c, x, 3), ya);
  auto d = Make({{"height_factor", 0.3}, {"seed", 1}}, {6, 6, 2}, kStep);
  EXPECT_NE(Apply(*d, x, 3), ya);
  EXPECT_EQ(a->Forward(x.data(), 3, false), x.data());
}

TEST(RandomZoomTest, BadArgumentsAreRefused) {
  struct Bad {
    json j;
    Shape in;
    const char* message;
  };
  const Bad cases[] = {
      {json::object(), {4, 4, 1}, "height_factor"},
      {{{"height_factor", 1.5}}, {4, 4, 1}, "height_factor"},
      {{{"height_factor", 0.1}, {"width_factor", {0.1, 2}}}, {4, 4, 1}, "width_factor"},
      {{{"height_factor", 0.1}, {"fill_mode", "mirror"}}, {4, 4, 1}, "fill_mode"},
      {{{"height_factor", 0.1}, {"interpolation", "bicubic"}}, {4, 4, 1}, "interpolation"},
      {{{"height_factor", 0.1}}, {16}, "RandomZoom needs an image per example"},
      {{{"height_factor", 0.1}, {"zoom", 1}}, {4, 4, 1}, "unknown field 'zoom'"},
  };
  for (const Bad& c : cases) {
    auto l = RandomZoom::Create(c.j, "z", c.in, "model.layers[0] (z)");
    ASSERT_FALSE(l.ok()) << c.j.dump();
    EXPECT_NE(l.status().message().find(c.message), std::string::npos) << l.status().message();
  }
}

TEST(RandomZoomTest, KerasJson) {
  const json keras = json::parse(R"({"class_name": "Sequential", "config": {"name": "s", "layers": [
      {"class_name": "InputLayer", "config": {"batch_shape": [null, 8, 8, 3], "dtype": "float32", "name": "in"}},
      {"class_name": "RandomZoom", "config": {"name": "random_zoom", "trainable": true, "dtype": "float32",
       "height_factor": 0.2, "width_factor": null, "fill_mode": "reflect", "interpolation": "bilinear",
       "seed": null, "fill_value": 0.0, "data_format": "channels_last"}},
      {"class_name": "Flatten", "config": {"name": "flatten"}},
      {"class_name": "Dense", "config": {"name": "dense", "units": 2}}]}})");
  auto compact = KerasJsonToCompact(keras);
  ASSERT_TRUE(compact.ok()) << compact.status().ToString();
  auto m = Model::FromJson(*compact, 1);
  ASSERT_TRUE(m.ok()) << m.status().ToString() << "\n" << compact->dump();
  const std::vector<float> x = testing::RandomVector(2 * 192, 4);
  ASSERT_NE((*m)->Forward(x.data(), 2, true), nullptr);
  const std::vector<float> dy = {1, -1, 0.5f, 2};
  (*m)->Backward(dy.data());
}

}  // namespace
}  // namespace ringtrain::nn
