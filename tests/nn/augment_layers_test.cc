// RandomFlip, RandomTranslation, RandomRotation and RandomCrop, each layer's op run by
// its CPU kernel (backends/cpu/augment_kernels.cc): exact identity and whole-pixel
// cases, determinism of the per-example streams, inference behaviour, Backward as the
// adjoint (<T x, y> == <x, T^T y>), argument errors, and models built through the
// compact form and Keras JSON.
//
// TensorFlow.js 4.22 has none of these four layers (its image layers are RandomWidth,
// CenterCrop, Resizing, Rescaling), so there is no tfjs fidelity test: the references
// are TF's kernels' documented semantics, written out here and in image_transform_test.cc.
#include <cmath>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "backends/cpu/augment_draws.h"
#include "cpu_run.h"
#include "nn/keras/keras_json.h"
#include "nn/model.h"
#include "nn/layers/random_affine.h"
#include "nn/layers/random_crop.h"
#include "nn/layers/random_flip.h"
#include "test_util.h"

namespace ringtrain::nn {
namespace {

using nlohmann::json;

using Factory = StatusOr<std::unique_ptr<Layer>> (*)(const json&, std::string, const Shape&, const std::string&);

// A layer and its CPU kernel (CpuRun), run in the step `ctx` (CpuRun::ctx).
struct Aug : testing::CpuRun {
  Aug(std::unique_ptr<Layer> made, const StepContext& step) : CpuRun(*made), owned(std::move(made)) { ctx = step; }
  const char* class_name() const { return owned->class_name(); }
  const ops::Op& op() const { return node().op; }
  std::unique_ptr<Layer> owned;
};

std::unique_ptr<Aug> Make(Factory f, const json& j, const Shape& in, const StepContext* ctx,
                          const std::string& name = "aug") {
  auto l = f(j, name, in, "test");
  EXPECT_TRUE(l.ok()) << l.status().ToString();
  if (!l.ok()) return nullptr;
  return std::make_unique<Aug>(std::move(l).value(), *ctx);
}

std::vector<float> Apply(Aug& l, const std::vector<float>& x, int batch, bool training = true) {
  const float* out = l.Forward(x.data(), batch, training);
  return std::vector<float>(out, out + static_cast<size_t>(batch) * l.layer().output_size());
}

// <T x, y> against <x, T^T y> for the transform of the last training Forward.
void ExpectAdjoint(Aug& l, int batch, uint64_t seed) {
  const std::vector<float> x = testing::RandomVector(batch * l.layer().input_size(), seed);
  const std::vector<float> y = testing::RandomVector(batch * l.layer().output_size(), seed + 1);
  const std::vector<float> tx = Apply(l, x, batch);
  const float* tty = l.Backward(y.data(), true);
  ASSERT_NE(tty, nullptr);
  double lhs = 0, rhs = 0;
  for (size_t i = 0; i < y.size(); ++i) lhs += static_cast<double>(tx[i]) * y[i];
  for (size_t i = 0; i < x.size(); ++i) rhs += static_cast<double>(x[i]) * tty[i];
  EXPECT_NEAR(lhs, rhs, 1e-5 * (1 + std::abs(lhs))) << l.class_name();
  EXPECT_EQ(l.Backward(y.data(), false), nullptr);
}

const Shape kImg = {6, 8, 3};

TEST(AugmentTest, ZeroFactorsAreTheExactIdentity) {
  StepContext ctx{42, 7, 1, 2, nullptr};
  const std::vector<float> x = testing::RandomVector(4 * 6 * 8 * 3, 1);
  for (const char* mode : {"reflect", "wrap", "constant", "nearest"}) {
    for (const char* interp : {"bilinear", "nearest"}) {
      auto t = Make(&RandomAffine::CreateTranslation,
                    {{"height_factor", 0.0}, {"width_factor", 0}, {"fill_mode", mode}, {"interpolation", interp}}, kImg,
                    &ctx);
      EXPECT_EQ(Apply(*t, x, 4), x) << mode << " " << interp;
      auto r = Make(&RandomAffine::CreateRotation, {{"factor", 0.0}, {"fill_mode", mode}, {"interpolation", interp}},
                    kImg, &ctx);
      EXPECT_EQ(Apply(*r, x, 4), x) << mode << " " << interp;
    }
  }
  // RandomCrop to the input's own size: the whole image, training or not.
  auto c = Make(&RandomCrop::Create, {{"height", 6}, {"width", 8}}, kImg, &ctx);
  EXPECT_EQ(Apply(*c, x, 4), x);
  EXPECT_EQ(Apply(*c, x, 4, false), x);
}

TEST(AugmentTest, InferenceIsTheIdentity) {
  StepContext ctx{1, 0, 0, 1, nullptr};
  const std::vector<float> x = testing::RandomVector(2 * 6 * 8 * 3, 2);
  auto f = Make(&RandomFlip::Create, json::object(), kImg, &ctx);
  auto t = Make(&RandomAffine::CreateTranslation, {{"height_factor", 0.5}, {"width_factor", 0.5}}, kImg, &ctx);
  auto r = Make(&RandomAffine::CreateRotation, {{"factor", 0.5}}, kImg, &ctx);
  for (Aug* l : {f.get(), t.get(), r.get()}) {
    EXPECT_EQ(l->Forward(x.data(), 2, false), x.data()) << l->class_name();
  }
}

TEST(AugmentTest, FlipsAreExactPerExample) {
  StepContext ctx{5, 3, 0, 1, nullptr};
  const int batch = 64, h = 6, w = 8, c = 3;
  const std::vector<float> x = testing::RandomVector(batch * h * w * c, 3);
  for (const char* mode : {"horizontal", "vertical", "horizontal_and_vertical"}) {
    auto l = Make(&RandomFlip::Create, {{"mode", mode}, {"seed", 17}}, kImg, &ctx);
    const ops::Op& op = l->op();
    const std::vector<float> y = Apply(*l, x, batch);
    std::set<int> seen;
    for (int b = 0; b < batch; ++b) {
      // The flips the kernel draws for example b in this step.
      const int f = backends::cpu::DrawFlips(ctx, op.key, b, op.flip_horizontal, op.flip_vertical);
      seen.insert(f);
      for (int r = 0; r < h; ++r) {
        for (int col = 0; col < w; ++col) {
          const int sr = (f & 2) ? h - 1 - r : r, sc = (f & 1) ? w - 1 - col : col;
          for (int k = 0; k < c; ++k) {
            ASSERT_EQ(y[((b * h + r) * w + col) * c + k], x[((b * h + sr) * w + sc) * c + k]) << mode;
          }
        }
      }
    }
    const std::string m = mode;
    const std::set<int> want = m == "horizontal" ? std::set<int>{0, 1}
                               : m == "vertical" ? std::set<int>{0, 2}
                                                 : std::set<int>{0, 1, 2, 3};
    EXPECT_EQ(seen, want) << mode;  // 64 draws: every combination occurs
    ExpectAdjoint(*l, 5, 30);
  }
}

// height_factor 1/3 of 6 rows and width_factor 1/4 of 8 columns: dy = +-2, dx = +-2
// exactly (a pair [f, f] fixes the shift), so the result is a whole-pixel shift.
TEST(AugmentTest, TranslationByWholePixelsIsExact) {
  StepContext ctx{9, 0, 0, 1, nullptr};
  const int h = 6, w = 8, c = 3;
  const std::vector<float> x = testing::RandomVector(h * w * c, 4);
  for (double fy : {-1.0 / 3, 1.0 / 3}) {
    for (double fx : {-0.25, 0.25}) {
      auto l = Make(&RandomAffine::CreateTranslation,
                    {{"height_factor", {fy, fy}}, {"width_factor", {fx, fx}}, {"fill_mode", "constant"},
                     {"fill_value", -3.0}},
                    kImg, &ctx);
      const std::vector<float> y = Apply(*l, x, 1);
      float t[8];  // the transform the kernel draws for the example
      backends::cpu::DrawAffineTransform(ctx, l->op(), h, w, 0, t);
      const int dy = static_cast<int>(std::lround(fy * h)), dx = static_cast<int>(std::lround(fx * w));
      EXPECT_EQ(t[2], static_cast<float>(-dx));
      EXPECT_EQ(t[5], static_cast<float>(-dy));
      for (int r = 0; r < h; ++r) {
        for (int col = 0; col < w; ++col) {
          const int sr = r - dy, sc = col - dx;
          for (int k = 0; k < c; ++k) {
            const float want = (sr < 0 || sr >= h || sc < 0 || sc >= w) ? -3.0f : x[(sr * w + sc) * c + k];
            ASSERT_EQ(y[(r * w + col) * c + k], want) << dy << " " << dx;
          }
        }
      }
    }
  }
}

// factor [0.25, 0.25]: a quarter turn, with nearest on a square image: a pure
// permutation, out[y][x] = in[x][W-1-y] (Keras' matrix with angle pi/2).
TEST(AugmentTest, QuarterTurnWithNearestIsExact) {
  StepContext ctx{0, 0, 0, 1, nullptr};
  const int n = 5, c = 2;
  const std::vector<float> x = testing::RandomVector(n * n * c, 5);
  auto l = Make(&RandomAffine::CreateRotation, {{"factor", {0.25, 0.25}}, {"interpolation", "nearest"}}, {n, n, c},
                &ctx);
  const std::vector<float> y = Apply(*l, x, 1);
  for (int r = 0; r < n; ++r) {
    for (int col = 0; col < n; ++col) {
      for (int k = 0; k < c; ++k) ASSERT_EQ(y[(r * n + col) * c + k], x[(col * n + (n - 1 - r)) * c + k]);
    }
  }
  // A half turn (factor 0.5) is the 180-degree rotation.
  auto h = Make(&RandomAffine::CreateRotation, {{"factor", {-0.5, -0.5}}, {"interpolation", "nearest"}}, {n, n, c},
                &ctx);
  const std::vector<float> z = Apply(*h, x, 1);
  for (int r = 0; r < n; ++r) {
    for (int col = 0; col < n; ++col) {
      for (int k = 0; k < c; ++k) ASSERT_EQ(z[(r * n + col) * c + k], x[((n - 1 - r) * n + (n - 1 - col)) * c + k]);
    }
  }
}

TEST(AugmentTest, RandomnessIsPerExampleAndFollowsTheContext) {
  const int batch = 4;
  const std::vector<float> x = testing::RandomVector(batch * 6 * 8 * 3, 6);
  const json args = {{"height_factor", 0.3}, {"width_factor", 0.3}};
  auto run = [&](StepContext ctx, const std::string& name, const std::vector<float>& in) {
    auto l = Make(&RandomAffine::CreateTranslation, args, kImg, &ctx, name);
    return Apply(*l, in, batch);
  };
  const StepContext base{11, 5, 1, 2, nullptr};
  const std::vector<float> a = run(base, "t", x);
  EXPECT_EQ(a, run(base, "t", x));  // same context: same bits (a fresh layer, as after a restart)
  StepContext other = base;
  other.step = 6;
  EXPECT_NE(a, run(other, "t", x));
  other = base;
  other.replica = 0;
  EXPECT_NE(a, run(other, "t", x));
  other = base;
  other.seed = 12;
  EXPECT_NE(a, run(other, "t", x));
  EXPECT_NE(a, run(base, "t2", x));  // another layer draws its own
  // Per example: the same image in every slot is transformed differently, and example
  // i's result does not depend on the batch size.
  std::vector<float> same;
  for (int b = 0; b < batch; ++b) same.insert(same.end(), x.begin(), x.begin() + 6 * 8 * 3);
  const std::vector<float> s = run(base, "t", same);
  const size_t n = 6 * 8 * 3;
  EXPECT_NE(std::vector<float>(s.begin(), s.begin() + n), std::vector<float>(s.begin() + n, s.begin() + 2 * n));
  StepContext ctx = base;
  auto l = Make(&RandomAffine::CreateTranslation, args, kImg, &ctx, "t");
  const float* one = l->Forward(x.data(), 1, true);
  EXPECT_EQ(std::vector<float>(one, one + n), std::vector<float>(a.begin(), a.begin() + n));
}

TEST(AugmentTest, RandomCropOffsetsCoverTheValidRange) {
  StepContext ctx{3, 1, 0, 1, nullptr};
  const int batch = 200, h = 6, w = 8, c = 3;
  const std::vector<float> x = testing::RandomVector(batch * h * w * c, 7);
  auto l = Make(&RandomCrop::Create, {{"height", 4}, {"width", 5}}, kImg, &ctx);
  const std::vector<float> y = Apply(*l, x, batch);
  std::set<int> hs, ws;
  for (int b = 0; b < batch; ++b) {
    int h0 = -1, w0 = -1;  // the offsets the kernel draws for example b
    backends::cpu::DrawCropOffsets(ctx, l->op().key, b, h, w, 4, 5, &h0, &w0);
    hs.insert(h0);
    ws.insert(w0);
    for (int r = 0; r < 4; ++r) {
      for (int col = 0; col < 5; ++col) {
        for (int k = 0; k < c; ++k) {
          ASSERT_EQ(y[((b * 4 + r) * 5 + col) * c + k], x[((b * h + h0 + r) * w + w0 + col) * c + k]);
        }
      }
    }
  }
  EXPECT_EQ(hs, (std::set<int>{0, 1, 2}));
  EXPECT_EQ(ws, (std::set<int>{0, 1, 2, 3}));
  ExpectAdjoint(*l, 3, 40);
}

// Inference: Keras' centred window of the target's aspect ratio, resized (TF bilinear,
// half-pixel centres) only when it is not already the target size.
TEST(AugmentTest, RandomCropInferenceIsKerasCentreCropAndResize) {
  StepContext ctx{};
  // 4 x 8 -> 4 x 4: the window is 4 x 4 at column 2: a plain centre crop.
  {
    const std::vector<float> x = testing::RandomVector(4 * 8, 8);
    auto l = Make(&RandomCrop::Create, {{"height", 4}, {"width", 4}}, {4, 8, 1}, &ctx);
    const std::vector<float> y = Apply(*l, x, 1, false);
    for (int r = 0; r < 4; ++r) {
      for (int col = 0; col < 4; ++col) ASSERT_EQ(y[r * 4 + col], x[r * 8 + col + 2]);
    }
  }
  // 6 x 8 -> 3 x 4: the window is the whole image, halved: each output is the mean of a
  // 2 x 2 block (sample points 2i + 0.5, lerp 1/2).
  {
    std::vector<float> x(6 * 8);
    for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((i * 7) % 16);
    auto l = Make(&RandomCrop::Create, {{"height", 3}, {"width", 4}}, {6, 8, 1}, &ctx);
    const std::vector<float> y = Apply(*l, x, 1, false);
    for (int r = 0; r < 3; ++r) {
      for (int col = 0; col < 4; ++col) {
        const float* p = &x[(2 * r) * 8 + 2 * col];
        ASSERT_EQ(y[r * 4 + col], (p[0] + p[1] + p[8] + p[9]) / 4) << r << "," << col;
      }
    }
  }
  // 5 x 10 -> 2 x 2: window 5 x 5 at column int(5 / 2) = 2, resized 5 -> 2 (scale 2.5:
  // sample points 0.75 and 3.25).
  {
    std::vector<float> x(5 * 10);
    for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 10 + 10 * (i / 10));  // 10 r + c
    auto l = Make(&RandomCrop::Create, {{"height", 2}, {"width", 2}}, {5, 10, 1}, &ctx);
    const std::vector<float> y = Apply(*l, x, 1, false);
    const float pts[2] = {0.75f, 3.25f};
    for (int r = 0; r < 2; ++r) {
      for (int col = 0; col < 2; ++col) EXPECT_FLOAT_EQ(y[r * 2 + col], 10 * pts[r] + 2 + pts[col]);
    }
  }
}

// Training on an input smaller than the crop: Keras resizes up (the same centred path).
TEST(AugmentTest, RandomCropResizesUpSmallInputs) {
  StepContext ctx{};
  const std::vector<float> x = {1, 5, 3, 9};  // 2 x 2
  auto l = Make(&RandomCrop::Create, {{"height", 4}, {"width", 4}}, {2, 2, 1}, &ctx);
  const std::vector<float> y = Apply(*l, x, 1, true);
  // Along each axis 2 -> 4 samples at -0.25, 0.25, 0.75, 1.25: a, .75a + .25b, .25a + .75b, b.
  auto lerp = [](float a, float b, int i) {
    const float w[4] = {0, 0.25f, 0.75f, 1};
    return a + (b - a) * w[i];
  };
  for (int r = 0; r < 4; ++r) {
    for (int col = 0; col < 4; ++col) {
      const float top = lerp(x[0], x[1], col), bottom = lerp(x[2], x[3], col);
      EXPECT_FLOAT_EQ(y[r * 4 + col], lerp(top, bottom, r)) << r << "," << col;
    }
  }
  ExpectAdjoint(*l, 2, 50);
  auto down = Make(&RandomCrop::Create, {{"height", 3}, {"width", 7}}, {5, 6, 2}, &ctx);  // narrower than 7
  ExpectAdjoint(*down, 2, 60);
}

TEST(AugmentTest, BackwardIsTheAdjoint) {
  StepContext ctx{21, 4, 1, 2, nullptr};
  for (const char* mode : {"reflect", "wrap", "constant", "nearest"}) {
    for (const char* interp : {"bilinear", "nearest"}) {
      auto t = Make(&RandomAffine::CreateTranslation,
                    {{"height_factor", {-0.4, 0.3}}, {"width_factor", 0.45}, {"fill_mode", mode},
                     {"interpolation", interp}},
                    kImg, &ctx);
      ExpectAdjoint(*t, 3, 70);
      auto r = Make(&RandomAffine::CreateRotation, {{"factor", 0.5}, {"fill_mode", mode}, {"interpolation", interp}},
                    kImg, &ctx);
      ExpectAdjoint(*r, 3, 80);
    }
  }
}

TEST(AugmentTest, BadArgumentsAreRefusedNamingTheField) {
  struct Case {
    Factory f;
    json j;
    Shape in;
    const char* want;
  } cases[] = {
      {&RandomFlip::Create, {{"mode", "diagonal"}}, kImg, "'mode'"},
      {&RandomFlip::Create, {{"seed", "abc"}}, kImg, "'seed'"},
      {&RandomFlip::Create, {{"modes", "horizontal"}}, kImg, "unknown field 'modes'"},
      {&RandomFlip::Create, json::object(), {28, 28}, "reshape"},
      {&RandomAffine::CreateTranslation, {{"width_factor", 0.1}}, kImg, "missing 'height_factor'"},
      {&RandomAffine::CreateTranslation, {{"height_factor", 0.1}}, kImg, "missing 'width_factor'"},
      {&RandomAffine::CreateTranslation, {{"height_factor", 1.5}, {"width_factor", 0.1}}, kImg, "'height_factor'"},
      {&RandomAffine::CreateTranslation, {{"height_factor", {0.1}}, {"width_factor", 0.1}}, kImg, "'height_factor'"},
      {&RandomAffine::CreateTranslation, {{"height_factor", 0.1}, {"width_factor", "x"}}, kImg, "'width_factor'"},
      {&RandomAffine::CreateTranslation,
       {{"height_factor", 0.1}, {"width_factor", 0.1}, {"fill_mode", "mirror"}},
       kImg,
       "'fill_mode'"},
      {&RandomAffine::CreateTranslation,
       {{"height_factor", 0.1}, {"width_factor", 0.1}, {"interpolation", "bicubic"}},
       kImg,
       "'interpolation'"},
      {&RandomAffine::CreateTranslation,
       {{"height_factor", 0.1}, {"width_factor", 0.1}, {"fill_value", "red"}},
       kImg,
       "'fill_value'"},
      {&RandomAffine::CreateRotation, json::object(), kImg, "missing 'factor'"},
      {&RandomAffine::CreateRotation, {{"factor", {-2, 0.1}}}, kImg, "'factor'"},
      {&RandomAffine::CreateRotation, {{"factor", 0.1}, {"value_range", {0, 1}}}, kImg, "unknown field 'value_range'"},
      {&RandomAffine::CreateRotation, {{"factor", 0.1}}, {10}, "RandomRotation needs an image"},
      {&RandomCrop::Create, {{"width", 4}}, kImg, "'height'"},
      {&RandomCrop::Create, {{"height", 4}}, kImg, "'width'"},
      {&RandomCrop::Create, {{"height", 0}, {"width", 4}}, kImg, "'height'"},
      {&RandomCrop::Create, {{"height", 4}, {"width", 2.5}}, kImg, "'width'"},
  };
  for (const Case& c : cases) {
    auto l = c.f(c.j, "aug", c.in, "model.layers[1] (aug)");
    ASSERT_FALSE(l.ok()) << c.j.dump();
    EXPECT_NE(l.status().message().find(c.want), std::string::npos) << l.status().message();
    EXPECT_NE(l.status().message().find("model.layers[1] (aug)"), std::string::npos) << l.status().message();
  }
}

// The layers in a model (compact form): augmentation between a convolution and the
// head; the convolution's kernel gradient flows back through every adjoint (checked by
// central differences with the step's transforms fixed by the context).
json CompactModel() {
  return {{"input_shape", {8, 8, 2}},
          {"layers",
           {{{"type", "conv2d"}, {"filters", 3}, {"kernel_size", 3}, {"padding", "same"}},
            {{"type", "RandomFlip"}, {"mode", "horizontal"}},
            {{"type", "random_translation"}, {"height_factor", 0.2}, {"width_factor", 0.2}},
            {{"type", "RandomRotation"}, {"factor", 0.1}, {"fill_mode", "constant"}},
            {{"type", "random_crop"}, {"height", 6}, {"width", 6}},
            {{"type", "flatten"}},
            {{"type", "dense"}, {"units", 2}}}}};
}

TEST(AugmentModelTest, CompactFormTrainsThroughTheAdjoints) {
  auto built = Model::FromJson(CompactModel(), 3);
  ASSERT_TRUE(built.ok()) << built.status().ToString();
  Model& m = **built;
  m.set_step_context(StepContext{5, 2, 0, 1, nullptr});
  const int batch = 2;
  const std::vector<float> x = testing::RandomVector(batch * 8 * 8 * 2, 90);
  const std::vector<float> r = testing::RandomVector(batch * 2, 91);
  const float* out = m.Forward(x.data(), batch, true);
  const double base = testing::Dot(out, r);
  m.Backward(r.data());
  const std::vector<float> grads(m.grads(), m.grads() + m.num_params());
  // The conv kernel's gradient (the first parameter) against central differences.
  const double eps = 1e-2;
  for (int i : {0, 5, 17, 40}) {
    const float keep = m.params()[i];
    m.params()[i] = keep + static_cast<float>(eps);
    const double up = testing::Dot(m.Forward(x.data(), batch, true), r);
    m.params()[i] = keep - static_cast<float>(eps);
    const double down = testing::Dot(m.Forward(x.data(), batch, true), r);
    m.params()[i] = keep;
    testing::ExpectClose(grads[static_cast<size_t>(i)], (up - down) / (2 * eps), "kernel " + std::to_string(i));
  }
  EXPECT_NE(base, 0.0);
  // Inference: the flip, translation and rotation pass through, the crop takes the centre.
  const float* eval = m.Forward(x.data(), batch, false);
  EXPECT_TRUE(std::isfinite(eval[0]));
}

TEST(AugmentModelTest, CompactFormErrorsNameTheLayerAndField) {
  json j = CompactModel();
  j["layers"][3].erase("factor");
  auto m = Model::FromJson(j, 1);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("model.layers[3] (random_rotation): missing 'factor'"), std::string::npos)
      << m.status().message();
  j = CompactModel();
  j["layers"][4]["height"] = -6;
  m = Model::FromJson(j, 1);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("'height'"), std::string::npos) << m.status().message();
}

// Keras 3 model JSON (as model.to_json() writes it; tfjs cannot write these layers).
TEST(AugmentModelTest, KerasJson) {
  const json keras = json::parse(R"({
    "class_name": "Sequential",
    "config": {"name": "aug", "trainable": true, "dtype": "float32", "layers": [
      {"module": "keras.layers", "class_name": "InputLayer",
       "config": {"batch_shape": [null, 8, 8, 3], "dtype": "float32", "sparse": false, "name": "input_layer"}},
      {"module": "keras.layers", "class_name": "RandomFlip",
       "config": {"name": "random_flip", "trainable": true, "dtype": "float32", "mode": "horizontal_and_vertical",
                  "seed": null, "data_format": "channels_last"}},
      {"module": "keras.layers", "class_name": "RandomTranslation",
       "config": {"name": "random_translation", "trainable": true, "dtype": "float32", "height_factor": 0.1,
                  "width_factor": [-0.2, 0.1], "fill_mode": "reflect", "interpolation": "bilinear", "seed": 3,
                  "fill_value": 0.0, "data_format": "channels_last"}},
      {"module": "keras.layers", "class_name": "RandomRotation",
       "config": {"name": "random_rotation", "trainable": true, "dtype": "float32", "factor": [-0.1, 0.1],
                  "data_format": "channels_last", "fill_mode": "nearest", "fill_value": 0.0,
                  "interpolation": "nearest", "seed": null}},
      {"module": "keras.layers", "class_name": "RandomCrop",
       "config": {"name": "random_crop", "trainable": true, "dtype": "float32", "height": 6, "width": 6,
                  "seed": 1234, "data_format": "channels_last"}},
      {"module": "keras.layers", "class_name": "Flatten",
       "config": {"name": "flatten", "trainable": true, "dtype": "float32", "data_format": "channels_last"}},
      {"module": "keras.layers", "class_name": "Dense",
       "config": {"name": "dense", "trainable": true, "dtype": "float32", "units": 3, "activation": "linear",
                  "use_bias": true}}]}})");
  auto compact = KerasJsonToCompact(keras);
  ASSERT_TRUE(compact.ok()) << compact.status().ToString();
  auto built = Model::FromJson(*compact, 1);
  ASSERT_TRUE(built.ok()) << built.status().ToString() << "\n" << compact->dump();
  Model& m = **built;
  const std::vector<float> x = testing::RandomVector(2 * 8 * 8 * 3, 95);
  const float* train = m.Forward(x.data(), 2, true);
  EXPECT_TRUE(std::isfinite(train[0]));
  // channels_first is refused with a line that says what to do.
  json bad = keras;
  bad["config"]["layers"][1]["config"]["data_format"] = "channels_first";
  auto refused = KerasJsonToCompact(bad);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("channels_last"), std::string::npos);
}

}  // namespace
}  // namespace ringtrain::nn
