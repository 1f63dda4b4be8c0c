// AVX-512 elementwise kernels (kernels/elementwise.h): 16 floats at a time, the tail
// masked; the plain loops' bits.
#include <immintrin.h>

#include "kernels/avx512_util.h"
#include "kernels/elementwise.h"

namespace ringtrain::kernels::avx512 {

void AddArrays(const float* a, const float* b, size_t n, bool relu, float* out) {
  const __m512 zero = _mm512_setzero_ps();
  for (size_t i = 0; i < n; i += 16) {
    const __mmask16 m = TailMask(static_cast<int>(n - i < 16 ? n - i : 16));
    __m512 v = _mm512_add_ps(_mm512_maskz_loadu_ps(m, a + i), _mm512_maskz_loadu_ps(m, b + i));
    if (relu) v = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(v, zero, _CMP_GT_OQ), v);
    _mm512_mask_storeu_ps(out + i, m, v);
  }
}

void AccumulateArray(float* acc, const float* x, size_t n) {
  for (size_t i = 0; i < n; i += 16) {
    const __mmask16 m = TailMask(static_cast<int>(n - i < 16 ? n - i : 16));
    _mm512_mask_storeu_ps(acc + i, m, _mm512_add_ps(_mm512_maskz_loadu_ps(m, acc + i), _mm512_maskz_loadu_ps(m, x + i)));
  }
}

void ReluMask(const float* dy, const float* y, size_t n, float* out) {
  const __m512 zero = _mm512_setzero_ps();
  for (size_t i = 0; i < n; i += 16) {
    const __mmask16 m = TailMask(static_cast<int>(n - i < 16 ? n - i : 16));
    const __mmask16 pos = _mm512_cmp_ps_mask(_mm512_maskz_loadu_ps(m, y + i), zero, _CMP_GT_OQ);
    _mm512_mask_storeu_ps(out + i, m, _mm512_maskz_loadu_ps(pos & m, dy + i));
  }
}

void AddArraysMasked(const float* a, const float* b, const float* y, size_t n, float* out) {
  const __m512 zero = _mm512_setzero_ps();
  for (size_t i = 0; i < n; i += 16) {
    const __mmask16 m = TailMask(static_cast<int>(n - i < 16 ? n - i : 16));
    const __mmask16 pos = _mm512_cmp_ps_mask(_mm512_maskz_loadu_ps(m, y + i), zero, _CMP_GT_OQ);
    const __m512 v = _mm512_add_ps(_mm512_maskz_loadu_ps(pos & m, a + i), _mm512_maskz_loadu_ps(pos & m, b + i));
    _mm512_mask_storeu_ps(out + i, m, _mm512_maskz_mov_ps(pos, v));
  }
}

}  // namespace ringtrain::kernels::avx512
