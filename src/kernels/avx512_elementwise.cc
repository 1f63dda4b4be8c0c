// AVX-512 elementwise kernels (kernels/elementwise.h): 16 floats at a time, the tail
// masked; the plain loops' bits. The relu's mask selects with a zeroing add or move on
// whole loads, not with loads masked by the data (those measured 20% slower on 4 MB
// arrays, ResNet-20's first stage).
#include <immintrin.h>

#include "kernels/avx512_util.h"
#include "kernels/elementwise.h"

namespace ringtrain::kernels::avx512 {
namespace {

// fn(i, mask) for every 16-float vector of [0, n): the full vectors with an all-ones mask
// (the compiler then loads and stores them whole), then the masked tail; the arrays `s`
// are fetched ahead (FetchAhead).
template <typename Fn>
inline void ForEachVector(size_t n, const Streams& s, const Fn& fn) {
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    FetchAhead(s, i);
    fn(i, static_cast<__mmask16>(0xFFFF));
  }
  if (i < n) fn(i, TailMask(static_cast<int>(n - i)));
}

// Lanes of y (under m) that are > 0 (NaN is not).
inline __mmask16 Positive(const float* y, __mmask16 m) {
  return _mm512_cmp_ps_mask(_mm512_maskz_loadu_ps(m, y), _mm512_setzero_ps(), _CMP_GT_OQ);
}

}  // namespace

void AddArrays(const float* a, const float* b, size_t n, bool relu, float* out) {
  const __m512 zero = _mm512_setzero_ps();
  ForEachVector(n, Streams{{a, b, out}}, [&](size_t i, __mmask16 m) {
    __m512 v = _mm512_add_ps(_mm512_maskz_loadu_ps(m, a + i), _mm512_maskz_loadu_ps(m, b + i));
    if (relu) v = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(v, zero, _CMP_GT_OQ), v);
    _mm512_mask_storeu_ps(out + i, m, v);
  });
}

void AccumulateArray(float* acc, const float* x, size_t n) {
  ForEachVector(n, Streams{{acc, x}}, [&](size_t i, __mmask16 m) {
    const __m512 sum = _mm512_add_ps(_mm512_maskz_loadu_ps(m, acc + i), _mm512_maskz_loadu_ps(m, x + i));
    _mm512_mask_storeu_ps(acc + i, m, sum);
  });
}

void ReluMask(const float* dy, const float* y, size_t n, float* out) {
  ForEachVector(n, Streams{{dy, y, out}}, [&](size_t i, __mmask16 m) {
    _mm512_mask_storeu_ps(out + i, m, _mm512_maskz_mov_ps(Positive(y + i, m), _mm512_maskz_loadu_ps(m, dy + i)));
  });
}

void AddArraysMasked(const float* a, const float* b, const float* y, size_t n, float* out) {
  ForEachVector(n, Streams{{a, b, y, out}}, [&](size_t i, __mmask16 m) {
    const __m512 sum =
        _mm512_maskz_add_ps(Positive(y + i, m), _mm512_maskz_loadu_ps(m, a + i), _mm512_maskz_loadu_ps(m, b + i));
    _mm512_mask_storeu_ps(out + i, m, sum);
  });
}

}  // namespace ringtrain::kernels::avx512
