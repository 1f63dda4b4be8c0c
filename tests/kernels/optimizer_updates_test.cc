// The updates must give the same bits as the plain, unfused C++ expressions on every
// CPU: the reference loops below are compiled without FMA contraction (baseline x86-64
// has no FMA), so any fused clone would show up as a mismatch here.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "kernels/kernels.h"

namespace ringtrain::kernels {
namespace {

std::vector<float> Random(size_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(gen);
  return v;
}

TEST(OptimizerUpdates, SgdBitExact) {
  const size_t n = 1037;
  auto p = Random(n, 1), g = Random(n, 2);
  auto want = p;
  volatile float lr = 0.01f;
  for (size_t i = 0; i < n; ++i) want[i] -= g[i] * lr;
  SgdUpdate(p.data(), g.data(), n, lr);
  EXPECT_EQ(p, want);
}

TEST(OptimizerUpdates, MomentumBitExact) {
  for (bool nesterov : {false, true}) {
    const size_t n = 531;
    auto p = Random(n, 3), g = Random(n, 4), v = Random(n, 5);
    auto wp = p, wv = v;
    const float lr = 0.05f, mom = 0.9f;
    for (size_t i = 0; i < n; ++i) {
      float vi = wv[i] * mom;
      vi -= g[i] * lr;
      wv[i] = vi;
      if (nesterov) {
        float step = wv[i] * mom;
        step -= g[i] * lr;
        wp[i] += step;
      } else {
        wp[i] += wv[i];
      }
    }
    SgdMomentumUpdate(p.data(), v.data(), g.data(), n, lr, mom, nesterov);
    EXPECT_EQ(p, wp) << nesterov;
    EXPECT_EQ(v, wv) << nesterov;
  }
}

TEST(OptimizerUpdates, AdamBitExact) {
  const size_t n = 777;
  auto p = Random(n, 6), g = Random(n, 7), m = Random(n, 8), v = Random(n, 9);
  for (float& x : v) x = std::fabs(x);
  auto wp = p, wm = m, wv = v;
  const float alpha = 0.001f, b1 = 0.1f, b2 = 0.001f, eps = 1e-7f;
  for (size_t i = 0; i < n; ++i) {
    float t = g[i] - wm[i];
    t *= b1;
    wm[i] += t;
    float gg = g[i] * g[i];
    gg -= wv[i];
    gg *= b2;
    wv[i] += gg;
    float num = wm[i] * alpha;
    float den = std::sqrt(wv[i]) + eps;
    wp[i] -= num / den;
  }
  AdamUpdate(p.data(), m.data(), v.data(), g.data(), n, alpha, b1, b2, eps);
  EXPECT_EQ(m, wm);
  EXPECT_EQ(v, wv);
  EXPECT_EQ(p, wp);
}

}  // namespace
}  // namespace ringtrain::kernels
