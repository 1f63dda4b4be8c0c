// backends/cuda/depthwise_math.h on the host against the CPU's depthwise kernels
// (kernels::DepthwiseConv*). The GPU kernels (src/backends/cuda/depthwise_conv.cu) are thin
// loops over these functions and CI has no GPU, so this is where their arithmetic is
// proven: each test runs the functions over the same index decomposition and chunking as
// the kernels, and expects the CPU's bits (the filter gradient in one lane; in chunks,
// within rounding).
#include "backends/cuda/depthwise_math.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernels/kernels.h"

namespace ringtrain::gpu {
namespace {

using ops::Window;

std::vector<float> Random(size_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = u(gen);
  return v;
}

void ExpectSameBits(const std::vector<float>& got, const std::vector<float>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(std::memcmp(&got[i], &want[i], sizeof(float)), 0)
        << what << " differs at " << i << ": " << got[i] << " vs " << want[i];
  }
}

void ExpectClose(const std::vector<float>& got, const std::vector<float>& want, double tol, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  double scale = 1e-6;
  for (float w : want) scale = std::max(scale, std::fabs(static_cast<double>(w)));
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_LE(std::fabs(static_cast<double>(got[i]) - want[i]), tol * scale) << what << " at " << i;
  }
}

// TensorFlow's 'valid' / 'same' geometry with dilation, as the layers resolve it.
Window MakeWindow(int h, int w, int c, int k, int stride, int dilation, bool same) {
  Window g;
  g.h = h, g.w = w, g.c = c, g.kh = k, g.kw = k + (same ? 0 : 1);  // a non-square kernel when valid
  g.stride_h = g.stride_w = stride;
  g.dilation_h = g.dilation_w = dilation;
  const int ekh = (g.kh - 1) * dilation + 1, ekw = (g.kw - 1) * dilation + 1;
  if (same) {
    g.out_h = (h + stride - 1) / stride, g.out_w = (w + stride - 1) / stride;
    g.pad_top = std::max((g.out_h - 1) * stride + ekh - h, 0) / 2;
    g.pad_left = std::max((g.out_w - 1) * stride + ekw - w, 0) / 2;
  } else {
    g.out_h = (h - ekh) / stride + 1, g.out_w = (w - ekw) / stride + 1;
  }
  return g;
}

struct Case {
  const char* label;
  Window g;
  int multiplier;
  int batch;
};

std::vector<Case> Cases() {
  return {
      {"valid s1 m1", MakeWindow(7, 8, 5, 3, 1, 1, false), 1, 3},
      {"same s1 m2", MakeWindow(6, 7, 4, 3, 1, 1, true), 2, 2},
      {"same s2 m1 (odd pad)", MakeWindow(8, 9, 3, 3, 2, 1, true), 1, 3},
      {"same s2 k4 m3", MakeWindow(9, 8, 2, 4, 2, 1, true), 3, 2},
      {"valid dilation 2 m2", MakeWindow(11, 12, 3, 3, 1, 2, false), 2, 2},
      {"same dilation 3 m1", MakeWindow(9, 10, 4, 3, 1, 3, true), 1, 2},
      {"valid s3 m1", MakeWindow(13, 14, 2, 2, 3, 1, false), 1, 2},
  };
}

// The kernels' loops: forward, one element per output (n, oh, ow, f).
std::vector<float> DeviceForward(const Window& g, int m, const std::vector<float>& x, const std::vector<float>& w,
                                 int batch) {
  const int F = g.c * m;
  std::vector<float> y(static_cast<size_t>(batch) * g.out_h * g.out_w * F);
  const int64_t per_image = static_cast<int64_t>(g.out_h) * g.out_w * F;
  for (int64_t e = 0; e < static_cast<int64_t>(y.size()); ++e) {
    const int64_t image = e / per_image;
    int64_t rest = e % per_image;
    const int f = static_cast<int>(rest % F);
    rest /= F;
    const int ow = static_cast<int>(rest % g.out_w);
    const int oh = static_cast<int>(rest / g.out_w);
    y[e] = dwm::ForwardElement(g, m, x.data() + image * g.in_size(), w.data(), oh, ow, f);
  }
  return y;
}

std::vector<float> DeviceInputGrad(const Window& g, int m, const std::vector<float>& d, const std::vector<float>& w,
                                   int batch) {
  std::vector<float> dx(static_cast<size_t>(batch) * g.in_size());
  const int64_t in_size = static_cast<int64_t>(g.in_size());
  const int64_t out_size = static_cast<int64_t>(g.out_h) * g.out_w * g.c * m;
  for (int64_t e = 0; e < static_cast<int64_t>(dx.size()); ++e) {
    const int64_t image = e / in_size;
    int64_t rest = e % in_size;
    const int c = static_cast<int>(rest % g.c);
    rest /= g.c;
    const int iw = static_cast<int>(rest % g.w);
    const int ih = static_cast<int>(rest / g.w);
    dx[e] = dwm::InputGradElement(g, m, d.data() + image * out_size, w.data(), ih, iw, c);
  }
  return dx;
}

// Both passes of the filter gradient, with the lane count the kernels would use
// (`lanes` 0) or a forced one.
std::vector<float> DeviceFilterGrad(const Window& g, int m, const std::vector<float>& x, const std::vector<float>& d,
                                    int batch, int64_t lanes = 0) {
  const int F = g.c * m;
  const int64_t pixels = static_cast<int64_t>(batch) * g.out_h * g.out_w;
  if (lanes == 0) lanes = dwm::FilterGradLanes(pixels);
  const int64_t per_lane = static_cast<int64_t>(g.kh) * g.kw * F;
  std::vector<float> partial(static_cast<size_t>(lanes * per_lane));
  for (int64_t e = 0; e < lanes * per_lane; ++e) {
    const int64_t lane = e / per_lane;
    const int64_t rest = e % per_lane;
    int64_t begin, end;
    dwm::FilterGradPixels(pixels, lanes, lane, &begin, &end);
    partial[e] = dwm::FilterGradChunk(g, m, x.data(), d.data(), begin, end, static_cast<int>(rest / F),
                                      static_cast<int>(rest % F));
  }
  std::vector<float> dw(static_cast<size_t>(per_lane));
  for (int64_t i = 0; i < per_lane; ++i) {
    float sum = partial[i];
    for (int64_t l = 1; l < lanes; ++l) sum += partial[l * per_lane + i];
    dw[i] = sum;
  }
  return dw;
}

TEST(DepthwiseMath, ForwardIsTheCpusBits) {
  for (const Case& c : Cases()) {
    SCOPED_TRACE(c.label);
    const int F = c.g.c * c.multiplier;
    const auto x = Random(static_cast<size_t>(c.batch) * c.g.in_size(), 1);
    const auto w = Random(static_cast<size_t>(c.g.kh) * c.g.kw * F, 2);
    std::vector<float> want(static_cast<size_t>(c.batch) * c.g.out_h * c.g.out_w * F);
    kernels::DepthwiseConvForward(c.g, c.multiplier, x.data(), c.batch, w.data(), nullptr, false, want.data());
    ExpectSameBits(DeviceForward(c.g, c.multiplier, x, w, c.batch), want, "forward");
  }
}

TEST(DepthwiseMath, InputGradIsTheCpusBits) {
  for (const Case& c : Cases()) {
    SCOPED_TRACE(c.label);
    const int F = c.g.c * c.multiplier;
    const auto d = Random(static_cast<size_t>(c.batch) * c.g.out_h * c.g.out_w * F, 3);
    const auto w = Random(static_cast<size_t>(c.g.kh) * c.g.kw * F, 4);
    std::vector<float> want(static_cast<size_t>(c.batch) * c.g.in_size());
    kernels::DepthwiseConvInputGrad(c.g, c.multiplier, d.data(), w.data(), c.batch, want.data());
    ExpectSameBits(DeviceInputGrad(c.g, c.multiplier, d, w, c.batch), want, "input gradient");
  }
}

TEST(DepthwiseMath, FilterGradInOneLaneIsTheCpusBits) {
  for (const Case& c : Cases()) {
    SCOPED_TRACE(c.label);
    const int F = c.g.c * c.multiplier;
    const auto x = Random(static_cast<size_t>(c.batch) * c.g.in_size(), 5);
    const auto d = Random(static_cast<size_t>(c.batch) * c.g.out_h * c.g.out_w * F, 6);
    std::vector<float> want(static_cast<size_t>(c.g.kh) * c.g.kw * F);
    kernels::DepthwiseConvFilterGrad(c.g, c.multiplier, x.data(), d.data(), c.batch, want.data());
    ASSERT_EQ(dwm::FilterGradLanes(static_cast<int64_t>(c.batch) * c.g.out_h * c.g.out_w), 1);
    ExpectSameBits(DeviceFilterGrad(c.g, c.multiplier, x, d, c.batch), want, "filter gradient");
  }
}

TEST(DepthwiseMath, FilterGradInChunksIsWithinRounding) {
  // 3 x 40 x 40 = 4,800 output pixels: 38 chunks of 127 and a short last one; and the
  // small cases forced into uneven chunks.
  std::vector<Case> cases = Cases();
  cases.push_back({"4,800 pixels", MakeWindow(42, 42, 3, 3, 1, 1, true), 2, 3});
  for (size_t k = 0; k < cases.size(); ++k) {
    const Case& c = cases[k];
    SCOPED_TRACE(c.label);
    const int F = c.g.c * c.multiplier;
    const auto x = Random(static_cast<size_t>(c.batch) * c.g.in_size(), 7);
    const auto d = Random(static_cast<size_t>(c.batch) * c.g.out_h * c.g.out_w * F, 8);
    std::vector<float> want(static_cast<size_t>(c.g.kh) * c.g.kw * F);
    kernels::DepthwiseConvFilterGrad(c.g, c.multiplier, x.data(), d.data(), c.batch, want.data());
    const bool forced = k + 1 < cases.size();
    if (!forced) {
      ASSERT_GT(dwm::FilterGradLanes(static_cast<int64_t>(c.batch) * c.g.out_h * c.g.out_w), 1);
    }
    ExpectClose(DeviceFilterGrad(c.g, c.multiplier, x, d, c.batch, forced ? 5 : 0), want, 1e-5, "filter gradient");
  }
}

TEST(DepthwiseMath, CoveringOutputInvertsTheTap) {
  // Every (output, tap) pair that lands inside the input is found from the input side, and no other.
  for (int stride = 1; stride <= 3; ++stride) {
    for (int dilation = 1; dilation <= 3; ++dilation) {
      for (int pad = 0; pad <= 2; ++pad) {
        const int k = 3, in = 11, out = 6;
        for (int i = 0; i < in; ++i) {
          for (int t = 0; t < k; ++t) {
            int want = -1;
            for (int o = 0; o < out; ++o) {
              if (o * stride - pad + t * dilation == i) want = o;
            }
            EXPECT_EQ(dwm::CoveringOutput(i, t, stride, pad, dilation, out), want)
                << "stride " << stride << " dilation " << dilation << " pad " << pad << " input " << i << " tap " << t;
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace ringtrain::gpu
