// Forward passes against values computed by hand and by a naive reference
// convolution written independently of the im2col path.
#include <cmath>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "nn/model.h"
#include "test_util.h"

namespace ringtrain::nn {
namespace {

using nlohmann::json;

std::unique_ptr<Model> Build(const char* text, uint64_t seed = 1) {
  auto m = Model::FromJson(json::parse(text), seed);
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return m.ok() ? std::move(m).value() : nullptr;
}

float* Param(Model& m, const std::string& name) {
  for (const ParamInfo& info : m.param_infos()) {
    if (info.name == name) return m.params() + info.offset;
  }
  ADD_FAILURE() << "no parameter " << name;
  return nullptr;
}

TEST(ForwardTest, TinyConvByHand) {
  // 3x3 single-channel image, one 2x2 filter, bias 0.5, 'valid'.
  auto m = Build(R"({"input_shape": [3, 3, 1], "layers": [
      {"type": "conv2d", "filters": 1, "kernel_size": 2}, {"type": "flatten"}]})");
  ASSERT_NE(m, nullptr);
  const float kernel[4] = {1, 2, 3, 4};  // [kh, kw, in=1, out=1]
  std::copy(kernel, kernel + 4, Param(*m, "conv2d/kernel"));
  *Param(*m, "conv2d/bias") = 0.5f;
  const float x[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  const float* y = m->Forward(x, 1, false);
  // y[0,0] = 1*1 + 2*2 + 3*4 + 4*5 + 0.5, and each step right adds 10, each step down 30.
  EXPECT_FLOAT_EQ(y[0], 37.5f);
  EXPECT_FLOAT_EQ(y[1], 47.5f);
  EXPECT_FLOAT_EQ(y[2], 67.5f);
  EXPECT_FLOAT_EQ(y[3], 77.5f);
}

TEST(ForwardTest, TinyDenseReluByHand) {
  auto m = Build(R"({"input_shape": [2], "layers": [
      {"type": "dense", "units": 3, "activation": "relu"}]})");
  ASSERT_NE(m, nullptr);
  const float kernel[6] = {1, -1, 2,    // row for input 0
                           3, 1, -4};   // row for input 1
  std::copy(kernel, kernel + 6, Param(*m, "dense/kernel"));
  const float bias[3] = {0.5f, -1, 0};
  std::copy(bias, bias + 3, Param(*m, "dense/bias"));
  const float x[4] = {1, 2, -1, 0.5f};
  const float* y = m->Forward(x, 2, false);
  // Example 0: [1+6+0.5, -1+2-1, 2-8] -> relu [7.5, 0, 0].
  // Example 1: [-1+1.5+0.5, 1+0.5-1, -2-2] -> relu [1, 0.5, 0].
  const float want[6] = {7.5f, 0, 0, 1, 0.5f, 0};
  for (int i = 0; i < 6; ++i) EXPECT_FLOAT_EQ(y[i], want[i]) << i;
}

// out[n, oh, ow, f] = b[f] + sum_{i,j,c} in[n, oh*s - pad + i, ow*s - pad + j, c] * k[i, j, c, f].
std::vector<float> ReferenceConv(const std::vector<float>& in, int n, int h, int w, int c, const float* k, int kh,
                                 int kw, int f, const float* b, int stride, bool same, int* oh_out, int* ow_out) {
  int oh, ow, pt = 0, pl = 0;
  if (same) {
    oh = (h + stride - 1) / stride;
    ow = (w + stride - 1) / stride;
    pt = std::max((oh - 1) * stride + kh - h, 0) / 2;
    pl = std::max((ow - 1) * stride + kw - w, 0) / 2;
  } else {
    oh = (h - kh) / stride + 1;
    ow = (w - kw) / stride + 1;
  }
  std::vector<float> out(static_cast<size_t>(n) * oh * ow * f);
  for (int e = 0; e < n; ++e)
    for (int y = 0; y < oh; ++y)
      for (int x = 0; x < ow; ++x)
        for (int o = 0; o < f; ++o) {
          double s = b[o];
          for (int i = 0; i < kh; ++i)
            for (int j = 0; j < kw; ++j) {
              const int iy = y * stride - pt + i, ix = x * stride - pl + j;
              if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;
              for (int ch = 0; ch < c; ++ch) {
                s += static_cast<double>(in[((e * h + iy) * w + ix) * c + ch]) * k[((i * kw + j) * c + ch) * f + o];
              }
            }
          out[((e * oh + y) * ow + x) * f + o] = static_cast<float>(s);
        }
  *oh_out = oh;
  *ow_out = ow;
  return out;
}

TEST(ForwardTest, ConvMatchesReferenceForPaddingsAndStrides) {
  struct Case {
    int h, w, c, k, f, stride;
    bool same;
  };
  for (const Case& t : {Case{6, 5, 2, 3, 3, 1, false}, Case{6, 5, 2, 3, 3, 2, true}, Case{5, 5, 1, 4, 2, 1, true},
                        Case{7, 7, 3, 2, 2, 3, false}, Case{4, 4, 2, 3, 2, 2, true}}) {
    json j = {{"input_shape", {t.h, t.w, t.c}},
              {"layers",
               {{{"type", "conv2d"}, {"filters", t.f}, {"kernel_size", t.k}, {"strides", t.stride},
                 {"padding", t.same ? "same" : "valid"}},
                {{"type", "flatten"}}}}};
    SCOPED_TRACE(j.dump());
    auto m = Model::FromJson(j, 3);
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    float* bias = Param(**m, "conv2d/bias");
    for (int o = 0; o < t.f; ++o) bias[o] = 0.1f * (o + 1);
    const int n = 2;
    std::vector<float> x = testing::RandomVector(static_cast<size_t>(n) * t.h * t.w * t.c, 17);
    int oh = 0, ow = 0;
    std::vector<float> want =
        ReferenceConv(x, n, t.h, t.w, t.c, Param(**m, "conv2d/kernel"), t.k, t.k, t.f, bias, t.stride, t.same, &oh, &ow);
    ASSERT_EQ((*m)->num_classes(), oh * ow * t.f);
    const float* y = (*m)->Forward(x.data(), n, false);
    for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(y[i], want[i], 1e-5) << i;
  }
}

TEST(ForwardTest, MaxPoolSamePaddingIgnoresPaddingCells) {
  // All inputs negative: a zero-padded pool would output 0 at the border.
  auto m = Build(R"({"input_shape": [3, 3, 1], "layers": [
      {"type": "max_pooling2d", "pool_size": 2, "padding": "same"}, {"type": "flatten"}]})");
  ASSERT_NE(m, nullptr);
  ASSERT_EQ(m->num_classes(), 4);  // ceil(3/2)^2
  const float x[9] = {-9, -8, -7, -6, -5, -4, -3, -2, -1};
  const float* y = m->Forward(x, 1, false);
  const float want[4] = {-5, -4, -2, -1};
  for (int i = 0; i < 4; ++i) EXPECT_FLOAT_EQ(y[i], want[i]) << i;
}

}  // namespace
}  // namespace ringtrain::nn
