// The optimizers' element-wise updates. Built with -ffp-contract=off: every product and
// sum rounds on its own, so the AVX-512 clone and the portable one give the same bits
// and replicas on different CPUs stay identical.
#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/kernels.h"
#include "kernels/thread_pool.h"

namespace ringtrain::kernels {
namespace {

#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define RINGTRAIN_TSAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__) || defined(RINGTRAIN_TSAN)
// ThreadSanitizer builds: target_clones' ifunc resolver runs while the dynamic loader
// relocates the program, before TSan's runtime is set up, and its instrumented entry
// crashes every binary at start. One clone gives the same bits (no contraction).
#define RINGTRAIN_CLONES
#else
#define RINGTRAIN_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#endif

RINGTRAIN_CLONES void SgdRange(float* p, const float* g, size_t n, float lr) {
  for (size_t i = 0; i < n; ++i) p[i] -= g[i] * lr;
}

RINGTRAIN_CLONES void MomentumRange(float* p, float* v, const float* g, size_t n, float lr, float momentum,
                                        bool nesterov) {
  if (nesterov) {
    for (size_t i = 0; i < n; ++i) {
      v[i] = v[i] * momentum - g[i] * lr;
      p[i] += v[i] * momentum - g[i] * lr;
    }
  } else {
    for (size_t i = 0; i < n; ++i) {
      v[i] = v[i] * momentum - g[i] * lr;
      p[i] += v[i];
    }
  }
}

RINGTRAIN_CLONES void AdamRange(float* p, float* m, float* v, const float* g, size_t n, float alpha,
                                 float one_minus_b1, float one_minus_b2, float eps) {
  for (size_t i = 0; i < n; ++i) {
    const float gi = g[i];
    m[i] += (gi - m[i]) * one_minus_b1;
    v[i] += (gi * gi - v[i]) * one_minus_b2;
    p[i] -= (m[i] * alpha) / (std::sqrt(v[i]) + eps);
  }
}

RINGTRAIN_CLONES void AmsgradRange(float* p, float* m, float* v, float* vhat, const float* g, size_t n, float alpha,
                                    float one_minus_b1, float one_minus_b2, float eps) {
  for (size_t i = 0; i < n; ++i) {
    const float gi = g[i];
    m[i] += (gi - m[i]) * one_minus_b1;
    v[i] += (gi * gi - v[i]) * one_minus_b2;
    vhat[i] = std::max(vhat[i], v[i]);
    p[i] -= (m[i] * alpha) / (std::sqrt(vhat[i]) + eps);
  }
}

RINGTRAIN_CLONES void RmspropRange(float* p, float* vel, float* mom, float* avg, const float* g, size_t n,
                                    const RmspropScalars& s) {
  for (size_t i = 0; i < n; ++i) {
    const float gi = g[i];
    vel[i] = s.rho * vel[i] + s.one_minus_rho * (gi * gi);
    float denominator;
    if (avg != nullptr) {
      avg[i] = s.rho * avg[i] + s.one_minus_rho * gi;
      denominator = (vel[i] - avg[i] * avg[i]) + s.epsilon;
    } else {
      denominator = vel[i] + s.epsilon;
    }
    const float increment = (s.lr * gi) / std::sqrt(denominator);
    if (mom != nullptr) {
      mom[i] = s.momentum * mom[i] + increment;
      p[i] -= mom[i];
    } else {
      p[i] -= increment;
    }
  }
}

RINGTRAIN_CLONES void AdagradRange(float* p, float* acc, const float* g, size_t n, float lr, float eps) {
  for (size_t i = 0; i < n; ++i) {
    const float gi = g[i];
    acc[i] += gi * gi;
    p[i] -= (lr * gi) / std::sqrt(acc[i] + eps);
  }
}

RINGTRAIN_CLONES void NadamRange(float* p, float* m, float* v, const float* g, size_t n, const NadamScalars& s) {
  for (size_t i = 0; i < n; ++i) {
    const float gi = g[i];
    m[i] += (gi - m[i]) * s.one_minus_b1;
    v[i] += (gi * gi - v[i]) * s.one_minus_b2;
    const float m_hat = (s.u_next * m[i]) / s.one_minus_u_product_next + (s.one_minus_u * gi) / s.one_minus_u_product;
    const float v_hat = v[i] / s.one_minus_b2_power;
    p[i] -= (m_hat * s.lr) / (std::sqrt(v_hat) + s.epsilon);
  }
}

RINGTRAIN_CLONES void WeightDecayRange(float* p, size_t n, float weight_decay, float lr) {
  for (size_t i = 0; i < n; ++i) p[i] = p[i] - p[i] * weight_decay * lr;
}

RINGTRAIN_CLONES void ScaleRange(float* dst, const float* src, size_t n, float mul, float div) {
  for (size_t i = 0; i < n; ++i) dst[i] = (src[i] * mul) / div;
}

RINGTRAIN_CLONES void ClipValueRange(float* dst, const float* src, size_t n, float limit) {
  // NaN stays NaN, as tf.clip_by_value leaves it.
  for (size_t i = 0; i < n; ++i) dst[i] = src[i] < -limit ? -limit : (src[i] > limit ? limit : src[i]);
}

// In double, in index order: products of two floats are exact in double, and without
// -ffast-math the compiler keeps the order of the sum, so every clone gives the same bits.
RINGTRAIN_CLONES double SumSquaresRange(const float* g, size_t n) {
  double s = 0.0;
  for (size_t i = 0; i < n; ++i) s += static_cast<double>(g[i]) * static_cast<double>(g[i]);
  return s;
}

#undef RINGTRAIN_CLONES

// Elementwise, so any split over threads gives the same bits; blocks of 64 KiB keep
// the per-call overhead small against the work.
constexpr size_t kBlock = 16384;

template <typename F>
void ForBlocks(size_t n, F&& f) {
  const int64_t blocks = static_cast<int64_t>((n + kBlock - 1) / kBlock);
  ParallelFor(blocks, [&](int64_t b, int64_t e) {
    const size_t begin = static_cast<size_t>(b) * kBlock, end = std::min(n, static_cast<size_t>(e) * kBlock);
    f(begin, end - begin);
  });
}

}  // namespace

void SgdUpdate(float* p, const float* g, size_t n, float lr) {
  ForBlocks(n, [&](size_t i, size_t len) { SgdRange(p + i, g + i, len, lr); });
}

void SgdMomentumUpdate(float* p, float* v, const float* g, size_t n, float lr, float momentum, bool nesterov) {
  ForBlocks(n, [&](size_t i, size_t len) { MomentumRange(p + i, v + i, g + i, len, lr, momentum, nesterov); });
}

void AdamUpdate(float* p, float* m, float* v, const float* g, size_t n, float alpha, float one_minus_b1,
                float one_minus_b2, float eps) {
  ForBlocks(n, [&](size_t i, size_t len) {
    AdamRange(p + i, m + i, v + i, g + i, len, alpha, one_minus_b1, one_minus_b2, eps);
  });
}

void AmsgradUpdate(float* p, float* m, float* v, float* vhat, const float* g, size_t n, float alpha,
                   float one_minus_b1, float one_minus_b2, float eps) {
  ForBlocks(n, [&](size_t i, size_t len) {
    AmsgradRange(p + i, m + i, v + i, vhat + i, g + i, len, alpha, one_minus_b1, one_minus_b2, eps);
  });
}

void RmspropUpdate(float* p, float* velocity, float* momentum, float* average_gradient, const float* g, size_t n,
                   const RmspropScalars& s) {
  ForBlocks(n, [&](size_t i, size_t len) {
    RmspropRange(p + i, velocity + i, momentum == nullptr ? nullptr : momentum + i,
                 average_gradient == nullptr ? nullptr : average_gradient + i, g + i, len, s);
  });
}

void AdagradUpdate(float* p, float* accumulator, const float* g, size_t n, float lr, float eps) {
  ForBlocks(n, [&](size_t i, size_t len) { AdagradRange(p + i, accumulator + i, g + i, len, lr, eps); });
}

void NadamUpdate(float* p, float* m, float* v, const float* g, size_t n, const NadamScalars& s) {
  ForBlocks(n, [&](size_t i, size_t len) { NadamRange(p + i, m + i, v + i, g + i, len, s); });
}

void WeightDecay(float* p, size_t n, float weight_decay, float lr) {
  ForBlocks(n, [&](size_t i, size_t len) { WeightDecayRange(p + i, len, weight_decay, lr); });
}

void ScaleGradients(float* dst, const float* src, size_t n, float mul, float div) {
  ForBlocks(n, [&](size_t i, size_t len) { ScaleRange(dst + i, src + i, len, mul, div); });
}

void ClipByValue(float* dst, const float* src, size_t n, float limit) {
  ForBlocks(n, [&](size_t i, size_t len) { ClipValueRange(dst + i, src + i, len, limit); });
}

double SumSquares(const float* g, size_t n) {
  // One partial per block whatever the thread count, added in block order.
  const size_t blocks = (n + kBlock - 1) / kBlock;
  if (blocks <= 1) return SumSquaresRange(g, n);
  std::vector<double> partial(blocks);
  ForBlocks(n, [&](size_t begin, size_t len) {
    for (size_t b = begin; b < begin + len; b += kBlock) {
      partial[b / kBlock] = SumSquaresRange(g + b, std::min(kBlock, begin + len - b));
    }
  });
  double s = 0.0;
  for (double x : partial) s += x;
  return s;
}

}  // namespace ringtrain::kernels
