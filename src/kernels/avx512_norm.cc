// AVX-512 per-channel kernels (kernels/norm.h): vectors over 16 channels at a time, rows
// in order, sums in double, no fused multiply-add (this file is built with
// -ffp-contract=off): the portable loops' bits.
#include <immintrin.h>

#include "kernels/avx512_util.h"
#include "kernels/norm.h"

namespace ringtrain::kernels::avx512 {
namespace {

inline __m512d Low(__m512 v) { return _mm512_cvtps_pd(_mm512_castps512_ps256(v)); }
inline __m512d High(__m512 v) {
  return _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
}
inline __mmask8 LowMask(__mmask16 m) { return static_cast<__mmask8>(m & 0xFF); }
inline __mmask8 HighMask(__mmask16 m) { return static_cast<__mmask8>(m >> 8); }

// The gradient g of 16 channels: dy, masked where the relu'd output is not > 0.
inline __m512 Grad(const float* dy, const float* y, size_t i, __mmask16 m) {
  const __m512 d = _mm512_maskz_loadu_ps(m, dy + i);
  if (y == nullptr) return d;
  const __m512 yv = _mm512_maskz_loadu_ps(m, y + i);
  return _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(yv, _mm512_setzero_ps(), _CMP_GT_OQ), d);
}

inline void StoreSums(double* dst, __mmask16 m, __m512d lo, __m512d hi) {
  _mm512_mask_storeu_pd(dst, LowMask(m), lo);
  _mm512_mask_storeu_pd(dst + 8, HighMask(m), hi);
}

}  // namespace

void ChannelSums(const float* x, size_t rows, int c, double* sum, double* sum_sq) {
  const size_t n = static_cast<size_t>(c);
  for (int k = 0; k < c; k += 16) {
    const __mmask16 m = TailMask(c - k);
    __m512d s0 = _mm512_setzero_pd(), s1 = s0, q0 = s0, q1 = s0;
    const float* p = x + k;
    for (size_t r = 0; r < rows; ++r, p += n) {
      const __m512 v = _mm512_maskz_loadu_ps(m, p);
      const __m512d lo = Low(v), hi = High(v);
      s0 = _mm512_add_pd(s0, lo);
      s1 = _mm512_add_pd(s1, hi);
      q0 = _mm512_add_pd(q0, _mm512_mul_pd(lo, lo));
      q1 = _mm512_add_pd(q1, _mm512_mul_pd(hi, hi));
    }
    StoreSums(sum + k, m, s0, s1);
    StoreSums(sum_sq + k, m, q0, q1);
  }
}

void ChannelAffine(const float* x, size_t rows, int c, const float* a, const float* b, bool relu, float* out) {
  const size_t n = static_cast<size_t>(c);
  const __m512 zero = _mm512_setzero_ps();
  for (int k = 0; k < c; k += 16) {
    const __mmask16 m = TailMask(c - k);
    const __m512 av = _mm512_maskz_loadu_ps(m, a + k), bv = _mm512_maskz_loadu_ps(m, b + k);
    for (size_t r = 0, i = static_cast<size_t>(k); r < rows; ++r, i += n) {
      __m512 v = _mm512_add_ps(_mm512_mul_ps(_mm512_maskz_loadu_ps(m, x + i), av), bv);
      if (relu) v = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(v, zero, _CMP_GT_OQ), v);
      _mm512_mask_storeu_ps(out + i, m, v);
    }
  }
}

void ChannelGradSums(const float* dy, const float* y, const float* x, size_t rows, int c, double* sum_g,
                     double* sum_gx) {
  const size_t n = static_cast<size_t>(c);
  for (int k = 0; k < c; k += 16) {
    const __mmask16 m = TailMask(c - k);
    __m512d s0 = _mm512_setzero_pd(), s1 = s0, q0 = s0, q1 = s0;
    for (size_t r = 0, i = static_cast<size_t>(k); r < rows; ++r, i += n) {
      const __m512 g = Grad(dy, y, i, m);
      const __m512 xv = _mm512_maskz_loadu_ps(m, x + i);
      const __m512d glo = Low(g), ghi = High(g);
      s0 = _mm512_add_pd(s0, glo);
      s1 = _mm512_add_pd(s1, ghi);
      q0 = _mm512_add_pd(q0, _mm512_mul_pd(glo, Low(xv)));
      q1 = _mm512_add_pd(q1, _mm512_mul_pd(ghi, High(xv)));
    }
    StoreSums(sum_g + k, m, s0, s1);
    StoreSums(sum_gx + k, m, q0, q1);
  }
}

void ChannelInputGrad(const float* dy, const float* y, const float* x, size_t rows, int c, const float* a,
                      const float* mean_g, const float* b, const float* mean, float* din) {
  const size_t n = static_cast<size_t>(c);
  for (int k = 0; k < c; k += 16) {
    const __mmask16 m = TailMask(c - k);
    const __m512 av = _mm512_maskz_loadu_ps(m, a + k), mg = _mm512_maskz_loadu_ps(m, mean_g + k);
    const __m512 bv = _mm512_maskz_loadu_ps(m, b + k), mv = _mm512_maskz_loadu_ps(m, mean + k);
    for (size_t r = 0, i = static_cast<size_t>(k); r < rows; ++r, i += n) {
      const __m512 g = Grad(dy, y, i, m);
      const __m512 xc = _mm512_sub_ps(_mm512_maskz_loadu_ps(m, x + i), mv);
      const __m512 v = _mm512_add_ps(_mm512_mul_ps(av, _mm512_sub_ps(g, mg)), _mm512_mul_ps(bv, xc));
      _mm512_mask_storeu_ps(din + i, m, v);
    }
  }
}

void ChannelScaleGrad(const float* dy, const float* y, size_t rows, int c, const float* a, float* din) {
  const size_t n = static_cast<size_t>(c);
  for (int k = 0; k < c; k += 16) {
    const __mmask16 m = TailMask(c - k);
    const __m512 av = _mm512_maskz_loadu_ps(m, a + k);
    for (size_t r = 0, i = static_cast<size_t>(k); r < rows; ++r, i += n) {
      _mm512_mask_storeu_ps(din + i, m, _mm512_mul_ps(Grad(dy, y, i, m), av));
    }
  }
}

}  // namespace ringtrain::kernels::avx512
