// Cropping2D, UpSampling2D, Conv2DTranspose, Permute, Resizing and CenterCrop: forward
// outputs, input gradients and weight gradients within AllClose's relative 1e-4 of
//   - TensorFlow.js (tests/oracle), the Keras reference, for the layers and arguments
//     whose tfjs layer computes what Keras does: Cropping2D, UpSampling2D "nearest",
//     Conv2DTranspose without dilation or output_padding, Permute;
//   - a direct double-precision evaluation of Keras' formula otherwise: tfjs' Resizing
//     and CenterCrop, and its bilinear UpSampling2D, use other sampling grids (aligned
//     corners, a nearest crop) than Keras' tf.image.resize (half-pixel centres, no
//     antialiasing), and its Conv2DTranspose has no dilation or output_padding. The
//     formula's gradients are taken exactly from its linearity (each input cell and
//     weight perturbed by one), and hand-computed values pin the formula itself.
#include <cmath>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "vision_probe.h"

namespace ringtrain::nn::vision_test {
namespace {

using nlohmann::json;
using ::ringtrain::testing::RunTfjs;
using ::ringtrain::testing::TfjsTensor;
using ::ringtrain::testing::TfjsValues;

json J(std::initializer_list<json::object_t::value_type> kv) { return json::object_t(kv); }

// ---------------------------------------------------------------- against TensorFlow.js

struct TfjsCase {
  const char* name;
  const char* class_name;
  json config;                  // Keras arguments, shared by both sides
  std::vector<int64_t> input;   // per example, HWC
  std::vector<int64_t> output;  // per example, as Keras computes it
  // tfjs 4.22's CPU gradient of resizeNearestNeighbor (its UpSampling2D's) is right for
  // the batch's first example only (the later ones' come out shifted); such cases check
  // the input gradient as the forward's adjoint instead (VisionFormulaTest pins it
  // exactly).
  bool adjoint_din = false;
};
void PrintTo(const TfjsCase& c, std::ostream* os) { *os << c.name; }

class VisionTfjsTest : public ::testing::TestWithParam<TfjsCase> {};

TEST_P(VisionTfjsTest, MatchesTfjs) {
  RT_REQUIRE_TFJS();
  const TfjsCase& c = GetParam();
  json mine_config = c.config;
  mine_config["type"] = c.class_name;
  auto m = BuildProbe(mine_config, c.input);
  ASSERT_NE(m, nullptr);
  ASSERT_EQ(m->num_classes(), Elements(c.output)) << "ringtrain's output shape differs from Keras'";
  const int batch = 3;
  const auto mine = SetWeights(*m, 900);
  auto shape_of = [&](const std::string& name) { return FindParam(*m, std::string(kLayer) + "/" + name)->shape; };
  json weights = json::object();
  for (const auto& [name, v] : mine) weights[name] = TfjsTensor(shape_of(name), v);
  const std::vector<float> x = testing::RandomVector(batch * Elements(c.input), 21);
  const std::vector<float> dy = testing::RandomVector(batch * Elements(c.output), 22);
  json req = {{"kind", "layer"},
              {"layer", {{"class_name", c.class_name}, {"config", c.config}}},
              {"inputs", {TfjsTensor(WithBatch(batch, c.input), x)}},
              {"training", true},
              {"dy", TfjsTensor(WithBatch(batch, c.output), dy)}};
  if (!weights.empty()) req["weights"] = weights;
  auto r = RunTfjs(req);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  std::map<std::string, std::vector<float>> want_grads;
  for (const auto& [name, v] : mine) {
    ASSERT_TRUE((*r)["weight_grads"].contains(name)) << (*r)["weight_grads"].dump();
    want_grads[name] = TfjsValues((*r)["weight_grads"][name], shape_of(name));
  }
  CompareProbe(*m, x, batch, dy, TfjsValues((*r)["output"], WithBatch(batch, c.output)), want_grads,
               TfjsValues((*r)["input_grads"][0], WithBatch(batch, c.input)), c.adjoint_din);
}

INSTANTIATE_TEST_SUITE_P(
    Vision, VisionTfjsTest,
    ::testing::Values(
        TfjsCase{"cropping_zero", "Cropping2D", J({{"cropping", {{0, 0}, {0, 0}}}}), {3, 4, 2}, {3, 4, 2}},
        TfjsCase{"cropping_int", "Cropping2D", J({{"cropping", 1}}), {4, 5, 2}, {2, 3, 2}},
        TfjsCase{"cropping_pair", "Cropping2D", J({{"cropping", {2, 1}}}), {6, 4, 3}, {2, 2, 3}},
        TfjsCase{"cropping_4", "Cropping2D", J({{"cropping", {{0, 2}, {3, 1}}}}), {5, 6, 2}, {3, 2, 2}},
        TfjsCase{"upsampling_default", "UpSampling2D", J({}), {3, 2, 2}, {6, 4, 2}, /*adjoint_din=*/true},
        TfjsCase{"upsampling_3x1_nearest", "UpSampling2D", J({{"size", {3, 1}}, {"interpolation", "nearest"}}),
                 {2, 4, 3}, {6, 4, 3}, /*adjoint_din=*/true},
        TfjsCase{"conv_t_valid", "Conv2DTranspose", J({{"filters", 3}, {"kernel_size", 3}}), {4, 3, 2}, {6, 5, 3}},
        TfjsCase{"conv_t_same_strides2_relu", "Conv2DTranspose",
                 J({{"filters", 4}, {"kernel_size", {3, 2}}, {"strides", 2}, {"padding", "same"},
                    {"activation", "relu"}}),
                 {3, 4, 3}, {6, 8, 4}},
        TfjsCase{"conv_t_valid_strides_3_2_no_bias", "Conv2DTranspose",
                 J({{"filters", 2}, {"kernel_size", {2, 4}}, {"strides", {3, 2}}, {"use_bias", false}}), {3, 3, 2},
                 {9, 8, 2}},
        TfjsCase{"conv_t_same_k4_s2_tanh", "Conv2DTranspose",
                 J({{"filters", 3}, {"kernel_size", 4}, {"strides", 2}, {"padding", "same"}, {"activation", "tanh"}}),
                 {3, 2, 2}, {6, 4, 3}},
        TfjsCase{"conv_t_same_k2_asymmetric", "Conv2DTranspose",
                 J({{"filters", 2}, {"kernel_size", 2}, {"padding", "same"}}), {4, 5, 3}, {4, 5, 2}},
        TfjsCase{"permute_hwc_to_chw", "Permute", J({{"dims", {3, 1, 2}}}), {2, 3, 4}, {4, 2, 3}},
        TfjsCase{"permute_swap_hw", "Permute", J({{"dims", {2, 1, 3}}}), {3, 5, 2}, {5, 3, 2}},
        TfjsCase{"permute_identity", "Permute", J({{"dims", {1, 2, 3}}}), {2, 2, 3}, {2, 2, 3}}),
    [](const auto& info) { return std::string(info.param.name); });

// ---------------------------------------------------------------- against Keras' formula

// One example's output from one example's input and the layer's weights, in double.
using RefFn = std::function<std::vector<double>(const std::vector<double>& x,
                                                const std::map<std::string, std::vector<double>>& w)>;

// tf.image.resize (half-pixel centres, antialias off) of the box (top, left, bh x bw) of
// an [h, w, c] image to [oh, ow, c]; a box of the output's size is copied.
RefFn ResizeRef(int h, int w, int c, int top, int left, int bh, int bw, int oh, int ow, bool bilinear) {
  return [=](const std::vector<double>& x, const std::map<std::string, std::vector<double>>&) {
    std::vector<double> y(static_cast<size_t>(oh) * ow * c);
    auto at = [&](int yy, int xx, int k) { return x[((top + yy) * static_cast<size_t>(w) + left + xx) * c + k]; };
    const bool copy = bh == oh && bw == ow;
    for (int i = 0; i < oh; ++i) {
      for (int j = 0; j < ow; ++j) {
        for (int k = 0; k < c; ++k) {
          double v;
          if (copy) {
            v = at(i, j, k);
          } else if (!bilinear) {  // floor((o + 0.5) * in / out), at most in - 1
            const int si = std::min(static_cast<int>(std::floor((i + 0.5) * bh / oh)), bh - 1);
            const int sj = std::min(static_cast<int>(std::floor((j + 0.5) * bw / ow)), bw - 1);
            v = at(si, sj, k);
          } else {  // (o + 0.5) * in / out - 0.5, clamped to the box
            const double fy = (i + 0.5) * bh / oh - 0.5, fx = (j + 0.5) * bw / ow - 0.5;
            const int y0 = static_cast<int>(std::floor(fy)), x0 = static_cast<int>(std::floor(fx));
            const double ly = fy - y0, lx = fx - x0;
            auto clamp = [](int a, int n) { return std::max(0, std::min(a, n - 1)); };
            const double tl = at(clamp(y0, bh), clamp(x0, bw), k), tr = at(clamp(y0, bh), clamp(x0 + 1, bw), k);
            const double bl = at(clamp(y0 + 1, bh), clamp(x0, bw), k), br = at(clamp(y0 + 1, bh), clamp(x0 + 1, bw), k);
            v = (1 - ly) * ((1 - lx) * tl + lx * tr) + ly * ((1 - lx) * bl + lx * br);
          }
          y[(static_cast<size_t>(i) * ow + j) * c + k] = v;
        }
      }
    }
    return y;
  };
}

// tf.nn.conv2d_transpose of an [h, w, c] input to [oh, ow, f] with kernel [kh, kw, f, c]:
// input cell (iy, ix) meets output (iy * s - pad_top + i * d, ...) through tap (i, j),
// with TensorFlow's padding of the convolution from the output back to the input.
RefFn ConvTransposeRef(int h, int w, int c, int f, int kh, int kw, int sh, int sw, int dh, int dw, bool same, int oh,
                       int ow, bool bias) {
  auto pad = [same](int in, int out, int k, int s, int d) {
    const int keff = (k - 1) * d + 1;
    return same ? std::max((in - 1) * s + keff - out, 0) / 2 : 0;
  };
  const int pt = pad(h, oh, kh, sh, dh), pl = pad(w, ow, kw, sw, dw);
  return [=](const std::vector<double>& x, const std::map<std::string, std::vector<double>>& wt) {
    const std::vector<double>& k = wt.at("kernel");
    std::vector<double> y(static_cast<size_t>(oh) * ow * f, 0.0);
    for (int iy = 0; iy < h; ++iy)
      for (int ix = 0; ix < w; ++ix)
        for (int i = 0; i < kh; ++i)
          for (int j = 0; j < kw; ++j) {
            const int oy = iy * sh - pt + i * dh, ox = ix * sw - pl + j * dw;
            if (oy < 0 || oy >= oh || ox < 0 || ox >= ow) continue;
            for (int fo = 0; fo < f; ++fo)
              for (int ci = 0; ci < c; ++ci) {
                const double xv = x[(static_cast<size_t>(iy) * w + ix) * c + ci];
                const double kv = k[((static_cast<size_t>(i) * kw + j) * f + fo) * c + ci];
                y[(static_cast<size_t>(oy) * ow + ox) * f + fo] += xv * kv;
              }
          }
    if (bias) {
      const std::vector<double>& b = wt.at("bias");
      for (size_t e = 0; e < y.size(); ++e) y[e] += b[e % f];
    }
    return y;
  };
}

struct RefCase {
  const char* name;
  json config;  // with "type"
  std::vector<int64_t> input, output;
  RefFn ref;    // linear in x and in each weight
};
void PrintTo(const RefCase& c, std::ostream* os) { *os << c.name; }

std::vector<double> ToDouble(const float* v, size_t n) { return std::vector<double>(v, v + n); }

class VisionFormulaTest : public ::testing::TestWithParam<RefCase> {};

TEST_P(VisionFormulaTest, MatchesKerasFormula) {
  const RefCase& c = GetParam();
  auto m = BuildProbe(c.config, c.input);
  ASSERT_NE(m, nullptr);
  ASSERT_EQ(m->num_classes(), Elements(c.output)) << "ringtrain's output shape differs from Keras'";
  const int batch = 2;
  const auto mine = SetWeights(*m, 950);
  std::map<std::string, std::vector<double>> w;
  for (const auto& [name, v] : mine) w[name] = ToDouble(v.data(), v.size());
  const size_t in = static_cast<size_t>(Elements(c.input)), out = static_cast<size_t>(Elements(c.output));
  const std::vector<float> x = testing::RandomVector(batch * in, 31);
  const std::vector<float> dy = testing::RandomVector(batch * out, 32);
  std::vector<float> want_out, want_din(batch * in);
  std::map<std::string, std::vector<float>> want_grads;
  for (const auto& [name, v] : w) want_grads[name].assign(v.size(), 0.0f);
  auto dot_dy = [&](const std::vector<double>& a, const std::vector<double>& b, int n) {
    double s = 0;
    for (size_t i = 0; i < out; ++i) s += (a[i] - b[i]) * dy[n * out + i];
    return s;
  };
  for (int n = 0; n < batch; ++n) {
    const std::vector<double> xn = ToDouble(x.data() + n * in, in);
    const std::vector<double> y = c.ref(xn, w);
    for (double v : y) want_out.push_back(static_cast<float>(v));
    for (size_t j = 0; j < in; ++j) {  // d <y, dy> / d x_j: the layer is linear in x
      std::vector<double> xj = xn;
      xj[j] += 1.0;
      want_din[n * in + j] = static_cast<float>(dot_dy(c.ref(xj, w), y, n));
    }
    for (auto& [name, v] : w) {  // and in each weight
      for (size_t k = 0; k < v.size(); ++k) {
        std::map<std::string, std::vector<double>> wk = w;
        wk[name][k] += 1.0;
        want_grads[name][k] += static_cast<float>(dot_dy(c.ref(xn, wk), y, n));
      }
    }
  }
  CompareProbe(*m, x, batch, dy, want_out, want_grads, want_din);
}

INSTANTIATE_TEST_SUITE_P(
    Vision, VisionFormulaTest,
    ::testing::Values(
        RefCase{"upsampling_bilinear_2", J({{"type", "UpSampling2D"}, {"interpolation", "bilinear"}}), {3, 4, 2},
                {6, 8, 2}, ResizeRef(3, 4, 2, 0, 0, 3, 4, 6, 8, true)},
        RefCase{"upsampling_bilinear_3x2",
                J({{"type", "UpSampling2D"}, {"size", {3, 2}}, {"interpolation", "bilinear"}}),
                {2, 3, 3}, {6, 6, 3}, ResizeRef(2, 3, 3, 0, 0, 2, 3, 6, 6, true)},
        RefCase{"upsampling_nearest_2x3", J({{"type", "UpSampling2D"}, {"size", {2, 3}}}), {3, 2, 2}, {6, 6, 2},
                ResizeRef(3, 2, 2, 0, 0, 3, 2, 6, 6, false)},
        RefCase{"resizing_bilinear_down", J({{"type", "Resizing"}, {"height", 3}, {"width", 4}}), {7, 5, 2}, {3, 4, 2},
                ResizeRef(7, 5, 2, 0, 0, 7, 5, 3, 4, true)},
        RefCase{"resizing_bilinear_up", J({{"type", "Resizing"}, {"height", 7}, {"width", 5}}), {3, 4, 2}, {7, 5, 2},
                ResizeRef(3, 4, 2, 0, 0, 3, 4, 7, 5, true)},
        RefCase{"resizing_nearest",
                J({{"type", "Resizing"}, {"height", 5}, {"width", 3}, {"interpolation", "nearest"}}),
                {3, 7, 2}, {5, 3, 2}, ResizeRef(3, 7, 2, 0, 0, 3, 7, 5, 3, false)},
        // crop_to_aspect_ratio: 6x9 to 4x4 keeps the centred 6x6 box (columns 1..6).
        RefCase{"resizing_crop_to_aspect", J({{"type", "Resizing"}, {"height", 4}, {"width", 4},
                                              {"crop_to_aspect_ratio", true}}),
                {6, 9, 2}, {4, 4, 2}, ResizeRef(6, 9, 2, 0, 1, 6, 6, 4, 4, true)},
        // 8x5 to 3x6: the box is int(5 * 3 / 6) = 2 rows, starting at int((8 - 2) / 2) = 3.
        RefCase{"resizing_crop_to_aspect_rows_nearest",
                J({{"type", "Resizing"}, {"height", 3}, {"width", 6}, {"crop_to_aspect_ratio", true},
                   {"interpolation", "nearest"}}),
                {8, 5, 1}, {3, 6, 1}, ResizeRef(8, 5, 1, 3, 0, 2, 5, 3, 6, false)},
        RefCase{"resizing_same_size", J({{"type", "Resizing"}, {"height", 4}, {"width", 3}}), {4, 3, 2}, {4, 3, 2},
                ResizeRef(4, 3, 2, 0, 0, 4, 3, 4, 3, true)},
        // CenterCrop of a larger input: the centred box, the odd cell after.
        RefCase{"center_crop", J({{"type", "CenterCrop"}, {"height", 3}, {"width", 2}}), {6, 5, 2}, {3, 2, 2},
                ResizeRef(6, 5, 2, 1, 1, 3, 2, 3, 2, true)},
        // Smaller on one side: Keras' smart_resize, the aspect box (4x2 of the 4x5 input,
        // from column 1) resized bilinearly.
        RefCase{"center_crop_upsize", J({{"type", "CenterCrop"}, {"height", 6}, {"width", 3}}), {4, 5, 2}, {6, 3, 2},
                ResizeRef(4, 5, 2, 0, 1, 4, 2, 6, 3, true)},
        RefCase{"conv_t_dilation2", J({{"type", "Conv2DTranspose"}, {"filters", 2}, {"kernel_size", 3},
                                       {"dilation_rate", 2}}),
                {3, 4, 2}, {7, 8, 2}, ConvTransposeRef(3, 4, 2, 2, 3, 3, 1, 1, 2, 2, false, 7, 8, true)},
        RefCase{"conv_t_dilation_2_1_same_no_bias", J({{"type", "Conv2DTranspose"}, {"filters", 3},
                                                       {"kernel_size", {2, 3}}, {"dilation_rate", {2, 1}},
                                                       {"padding", "same"}, {"use_bias", false}}),
                {4, 3, 2}, {4, 3, 3}, ConvTransposeRef(4, 3, 2, 3, 2, 3, 1, 1, 2, 1, true, 4, 3, false)},
        RefCase{"conv_t_output_padding_valid", J({{"type", "Conv2DTranspose"}, {"filters", 2}, {"kernel_size", 3},
                                                  {"strides", 2}, {"output_padding", 1}}),
                {3, 2, 2}, {8, 6, 2}, ConvTransposeRef(3, 2, 2, 2, 3, 3, 2, 2, 1, 1, false, 8, 6, true)},
        RefCase{"conv_t_output_padding_same", J({{"type", "Conv2DTranspose"}, {"filters", 2}, {"kernel_size", 3},
                                                 {"strides", {2, 3}}, {"padding", "same"},
                                                 {"output_padding", {1, 0}}}),
                {3, 2, 3}, {6, 4, 2}, ConvTransposeRef(3, 2, 3, 2, 3, 3, 2, 3, 1, 1, true, 6, 4, true)}),
    [](const auto& info) { return std::string(info.param.name); });

// Hand-computed values of the formula: a 1x2 row [a, b] upsampled bilinearly by 2 is
// [a, 0.75a + 0.25b, 0.25a + 0.75b, b] (half-pixel centres, edges clamped); nearest
// repeats; CenterCrop of 1..16 (4x4) to 2x2 keeps 6, 7, 10, 11.
TEST(VisionFormulaTest, HandComputedValues) {
  auto run = [](const json& layer, const std::vector<int64_t>& input, const std::vector<float>& x) {
    json l = layer;
    auto m = Model::FromJson({{"input_shape", input}, {"layers", {l, {{"type", "Flatten"}}}}}, 1);
    EXPECT_TRUE(m.ok()) << m.status().ToString();
    if (!m.ok()) return std::vector<float>{};
    const float* y = (*m)->Forward(x.data(), 1, false);
    return std::vector<float>(y, y + (*m)->num_classes());
  };
  EXPECT_EQ(run({{"type", "UpSampling2D"}, {"size", {1, 2}}, {"interpolation", "bilinear"}}, {1, 2, 1}, {4, 8}),
            (std::vector<float>{4, 5, 7, 8}));
  EXPECT_EQ(run({{"type", "UpSampling2D"}, {"size", {1, 2}}}, {1, 2, 1}, {4, 8}), (std::vector<float>{4, 4, 8, 8}));
  std::vector<float> img(16);
  for (int i = 0; i < 16; ++i) img[i] = static_cast<float>(i + 1);
  EXPECT_EQ(run({{"type", "CenterCrop"}, {"height", 2}, {"width", 2}}, {4, 4, 1}, img),
            (std::vector<float>{6, 7, 10, 11}));
  // Resizing 4 -> 2 bilinear: sources at 0.5 and 2.5, the means of neighbours.
  EXPECT_EQ(run({{"type", "Resizing"}, {"height", 1}, {"width", 2}}, {1, 4, 1}, {0, 2, 4, 8}),
            (std::vector<float>{1, 6}));
  // Cropping2D's default crops nothing.
  EXPECT_EQ(run({{"type", "Cropping2D"}}, {2, 2, 1}, {1, 2, 3, 4}), (std::vector<float>{1, 2, 3, 4}));
  // Permute [2, 3] -> [3, 2].
  EXPECT_EQ(run({{"type", "Permute"}, {"dims", {2, 1}}}, {2, 3}, {1, 2, 3, 4, 5, 6}),
            (std::vector<float>{1, 4, 2, 5, 3, 6}));
}

}  // namespace
}  // namespace ringtrain::nn::vision_test
