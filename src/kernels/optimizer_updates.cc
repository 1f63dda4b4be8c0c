// The optimizers' element-wise updates. Built with -ffp-contract=off: every product and
// sum rounds on its own, so the AVX-512 clone and the portable one give the same bits
// and replicas on different CPUs stay identical.
#include <algorithm>
#include <cmath>

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

}  // namespace ringtrain::kernels
