// The optimizers' element-wise updates. Built with -ffp-contract=off: every product and
// sum rounds on its own, so the AVX-512 clone and the portable one give the same bits
// and replicas on different CPUs stay identical.
#include <cmath>

#include "kernels/kernels.h"

namespace ringtrain::kernels {

#define RINGTRAIN_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))

RINGTRAIN_CLONES void SgdUpdate(float* p, const float* g, size_t n, float lr) {
  for (size_t i = 0; i < n; ++i) p[i] -= g[i] * lr;
}

RINGTRAIN_CLONES void SgdMomentumUpdate(float* p, float* v, const float* g, size_t n, float lr, float momentum,
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

RINGTRAIN_CLONES void AdamUpdate(float* p, float* m, float* v, const float* g, size_t n, float alpha,
                                 float one_minus_b1, float one_minus_b2, float eps) {
  for (size_t i = 0; i < n; ++i) {
    const float gi = g[i];
    m[i] += (gi - m[i]) * one_minus_b1;
    v[i] += (gi * gi - v[i]) * one_minus_b2;
    p[i] -= (m[i] * alpha) / (std::sqrt(v[i]) + eps);
  }
}

#undef RINGTRAIN_CLONES

}  // namespace ringtrain::kernels
