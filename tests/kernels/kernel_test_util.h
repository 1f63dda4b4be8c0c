// Helpers for the kernel tests: seeded random data, a double-precision reference, and
// a fixture that runs each test once per implementation (and thread count).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "kernels/impl.h"
#include "kernels/kernels.h"

namespace ringtrain::kernels {

inline std::vector<float> Random(size_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = dist(gen);
  return v;
}

// Max |a - b| / (|b| + scale): float kernels against a double reference.
inline void ExpectClose(const std::vector<float>& got, const std::vector<double>& want, double tol,
                        const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  double scale = 1e-3;
  for (double w : want) scale = std::max(scale, std::fabs(w));
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_NEAR(got[i], want[i], tol * scale) << what << " at " << i;
  }
}

// A window with TensorFlow's 'valid' or 'same' geometry (the kernels take it resolved).
inline Window MakeTestWindow(int h, int w, int c, int kh, int kw, int sh, int sw, bool same) {
  Window g;
  g.h = h, g.w = w, g.c = c, g.kh = kh, g.kw = kw, g.stride_h = sh, g.stride_w = sw;
  if (same) {
    g.out_h = (h + sh - 1) / sh, g.out_w = (w + sw - 1) / sw;
    g.pad_top = std::max((g.out_h - 1) * sh + kh - h, 0) / 2;
    g.pad_left = std::max((g.out_w - 1) * sw + kw - w, 0) / 2;
  } else {
    g.out_h = (h - kh) / sh + 1, g.out_w = (w - kw) / sw + 1;
  }
  return g;
}

// (implementation, threads): "avx512" runs only where the CPU has it.
class KernelTest : public ::testing::TestWithParam<std::tuple<std::string, int>> {
 protected:
  void SetUp() override {
    const std::string impl = std::get<0>(GetParam());
    SetForcePortable(impl == "portable");
    if (impl == "avx512" && !UseAvx512()) GTEST_SKIP() << "this CPU has no AVX-512F (or RINGTRAIN_KERNELS=portable)";
    SetNumThreads(std::get<1>(GetParam()));
  }
  void TearDown() override {
    SetForcePortable(false);
    SetNumThreads(1);
  }
};

#define RINGTRAIN_KERNEL_PARAMS                                                                              \
  ::testing::Combine(::testing::Values(std::string("avx512"), std::string("portable")), ::testing::Values(1, 3)), \
      [](const auto& info) { return std::get<0>(info.param) + "_t" + std::to_string(std::get<1>(info.param)); }

}  // namespace ringtrain::kernels
