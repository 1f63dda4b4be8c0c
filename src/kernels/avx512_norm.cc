// AVX-512 per-channel kernels (kernels/norm.h): vectors over 16 channels at a time, rows
// in order, sums in double, no fused multiply-add (this file is built with
// -ffp-contract=off): the portable loops' bits.
#include <immintrin.h>

#include <algorithm>

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

// The same where the relu's output is given as ReluOutput (x: x's vector at i).
inline __m512 Grad(const float* dy, const ReluOutput& y, __m512 x, size_t i, int k, __mmask16 m) {
  if (y.a == nullptr) return Grad(dy, y.y, i, m);
  const __m512 d = _mm512_maskz_loadu_ps(m, dy + i);
  const __m512 v = _mm512_add_ps(_mm512_mul_ps(x, _mm512_maskz_loadu_ps(m, y.a + k)), _mm512_maskz_loadu_ps(m, y.b + k));
  return _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_GT_OQ), d);
}

inline void StoreSums(double* dst, __mmask16 m, __m512d lo, __m512d hi) {
  _mm512_mask_storeu_pd(dst, LowMask(m), lo);
  _mm512_mask_storeu_pd(dst + 8, HighMask(m), hi);
}

}  // namespace

namespace {

// Sums over the rows of up to 64 channels from k (NV vectors of 16; lanes past c masked
// off): sum0 += a, sum1 += a * b per channel, with a and b what `load` gives for the row's
// vector v (load(element index, mask, first channel, &a, &b)). Named accumulators (two double vectors per float vector), not arrays: GCC 12
// keeps arrays of vectors on the stack.
template <int NV, typename Load>
void GroupSums(size_t rows, size_t n, int k, int c, const Load& load, double* sum0, double* sum1) {
  static_assert(NV >= 1 && NV <= 4, "up to 64 channels at once");
  const __m512d z = _mm512_setzero_pd();
  __m512d s00 = z, s01 = z, s10 = z, s11 = z, s20 = z, s21 = z, s30 = z, s31 = z;
  __m512d q00 = z, q01 = z, q10 = z, q11 = z, q20 = z, q21 = z, q30 = z, q31 = z;
  __mmask16 m[4];
  for (int v = 0; v < 4; ++v) m[v] = TailMask(c - k - 16 * v);
  for (size_t r = 0, i = static_cast<size_t>(k); r < rows; ++r, i += n) {
#define RT_VEC(v)                                                   \
  if constexpr (NV > v) {                                           \
    __m512 a, b;                                                    \
    load(i + 16 * v, m[v], k + 16 * v, &a, &b);                     \
    const __m512d alo = Low(a), ahi = High(a);                      \
    s##v##0 = _mm512_add_pd(s##v##0, alo);                          \
    s##v##1 = _mm512_add_pd(s##v##1, ahi);                          \
    q##v##0 = _mm512_add_pd(q##v##0, _mm512_mul_pd(alo, Low(b)));   \
    q##v##1 = _mm512_add_pd(q##v##1, _mm512_mul_pd(ahi, High(b)));  \
  }
    RT_VEC(0) RT_VEC(1) RT_VEC(2) RT_VEC(3)
#undef RT_VEC
  }
#define RT_STORE(v)                                          \
  if constexpr (NV > v) {                                    \
    StoreSums(sum0 + k + 16 * v, m[v], s##v##0, s##v##1);    \
    StoreSums(sum1 + k + 16 * v, m[v], q##v##0, q##v##1);    \
  }
  RT_STORE(0) RT_STORE(1) RT_STORE(2) RT_STORE(3)
#undef RT_STORE
}

// Every channel, 64 at a time (one pass over the rows when c <= 64).
template <typename Load>
void Sums(size_t rows, int c, const Load& load, double* sum0, double* sum1) {
  const size_t n = static_cast<size_t>(c);
  for (int k = 0; k < c; k += 64) {
    switch ((std::min(c - k, 64) + 15) / 16) {
      case 1: GroupSums<1>(rows, n, k, c, load, sum0, sum1); break;
      case 2: GroupSums<2>(rows, n, k, c, load, sum0, sum1); break;
      case 3: GroupSums<3>(rows, n, k, c, load, sum0, sum1); break;
      default: GroupSums<4>(rows, n, k, c, load, sum0, sum1); break;
    }
  }
}

// fn(i, mask, channel) for every 16-channel vector of every row, row by row.
template <typename Fn>
void ForEachVector(size_t rows, int c, const Fn& fn) {
  const size_t n = static_cast<size_t>(c);
  for (size_t r = 0, i = 0; r < rows; ++r, i += n) {
    for (int k = 0; k < c; k += 16) fn(i + static_cast<size_t>(k), TailMask(c - k), k);
  }
}

}  // namespace

void ChannelSums(const float* x, size_t rows, int c, double* sum, double* sum_sq) {
  Sums(rows, c, [x](size_t i, __mmask16 m, int, __m512* a, __m512* b) { *a = *b = _mm512_maskz_loadu_ps(m, x + i); },
       sum, sum_sq);
}

void ChannelAffine(const float* x, size_t rows, int c, const float* a, const float* b, const float* add, bool relu,
                   float* out) {
  const __m512 zero = _mm512_setzero_ps();
  ForEachVector(rows, c, [&](size_t i, __mmask16 m, int k) {
    __m512 v = _mm512_add_ps(_mm512_mul_ps(_mm512_maskz_loadu_ps(m, x + i), _mm512_maskz_loadu_ps(m, a + k)),
                             _mm512_maskz_loadu_ps(m, b + k));
    if (add != nullptr) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(m, add + i));
    if (relu) v = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(v, zero, _CMP_GT_OQ), v);
    _mm512_mask_storeu_ps(out + i, m, v);
  });
}

void ChannelGradSums(const float* dy, const ReluOutput& y, const float* x, size_t rows, int c, double* sum_g,
                     double* sum_gx) {
  Sums(rows, c,
       [dy, &y, x](size_t i, __mmask16 m, int k, __m512* g, __m512* xv) {
         *xv = _mm512_maskz_loadu_ps(m, x + i);
         *g = Grad(dy, y, *xv, i, k, m);
       },
       sum_g, sum_gx);
}

void ChannelInputGrad(const float* dy, const ReluOutput& y, const float* x, size_t rows, int c, const float* a,
                      const float* mean_g, const float* b, const float* mean, float* din) {
  ForEachVector(rows, c, [&](size_t i, __mmask16 m, int k) {
    const __m512 xv = _mm512_maskz_loadu_ps(m, x + i);
    const __m512 g = Grad(dy, y, xv, i, k, m);
    const __m512 xc = _mm512_sub_ps(xv, _mm512_maskz_loadu_ps(m, mean + k));
    const __m512 v = _mm512_add_ps(_mm512_mul_ps(_mm512_maskz_loadu_ps(m, a + k),
                                                 _mm512_sub_ps(g, _mm512_maskz_loadu_ps(m, mean_g + k))),
                                   _mm512_mul_ps(_mm512_maskz_loadu_ps(m, b + k), xc));
    _mm512_mask_storeu_ps(din + i, m, v);
  });
}

void ChannelScaleGrad(const float* dy, const float* y, size_t rows, int c, const float* a, float* din) {
  ForEachVector(rows, c, [&](size_t i, __mmask16 m, int k) {
    _mm512_mask_storeu_ps(din + i, m, _mm512_mul_ps(Grad(dy, y, i, m), _mm512_maskz_loadu_ps(m, a + k)));
  });
}

}  // namespace ringtrain::kernels::avx512
