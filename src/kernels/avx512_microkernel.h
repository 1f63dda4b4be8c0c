// The register-tile product every AVX-512 dense and convolution pass is built on:
//   C[r, 16v .. 16v+15] (+)= sum over k < kc of A(r, k) * B[k, 16v .. 16v+15]
// for r < MR (<= 6) and v < NV (<= 4), A(r, k) = a[r * ars + k * aks], B rows ldb apart,
// C rows ldc apart; the last vector of each row is masked by `last`.
//
// The accumulators are named variables, not an array: GCC 12 keeps an array of 24
// __m512 on the stack and reloads it every iteration (3x slower), but allocates named
// ones to registers. Unused ones (MR, NV below the maximum) compile away.
// Include only from files compiled with -mavx512f.
#pragma once

#include <immintrin.h>

#include <cstddef>

namespace ringtrain::kernels::avx512 {

#define RT_MK_ROW_VARS(r) __m512 c##r##0 = z, c##r##1 = z, c##r##2 = z, c##r##3 = z;
#define RT_MK_LOAD(r, v)                                                                      \
  if constexpr (MR > r && NV > v) {                                                           \
    c##r##v = v == NV - 1 ? _mm512_maskz_loadu_ps(last, c + r * ldc + 16 * v)                 \
                          : _mm512_loadu_ps(c + r * ldc + 16 * v);                            \
  }
#define RT_MK_STORE(r, v)                                                                     \
  if constexpr (MR > r && NV > v) {                                                           \
    if (v == NV - 1) {                                                                        \
      _mm512_mask_storeu_ps(c + r * ldc + 16 * v, last, c##r##v);                            \
    } else {                                                                                  \
      _mm512_storeu_ps(c + r * ldc + 16 * v, c##r##v);                                        \
    }                                                                                         \
  }
#define RT_MK_FMA_ROW(r)                                                                      \
  if constexpr (MR > r) {                                                                     \
    const __m512 s = _mm512_set1_ps(a##r[0]);                                                 \
    a##r += aks;                                                                              \
    if constexpr (NV > 0) c##r##0 = _mm512_fmadd_ps(s, b0, c##r##0);                          \
    if constexpr (NV > 1) c##r##1 = _mm512_fmadd_ps(s, b1, c##r##1);                          \
    if constexpr (NV > 2) c##r##2 = _mm512_fmadd_ps(s, b2, c##r##2);                          \
    if constexpr (NV > 3) c##r##3 = _mm512_fmadd_ps(s, b3, c##r##3);                          \
  }
#define RT_MK_EACH_V(M, r) M(r, 0) M(r, 1) M(r, 2) M(r, 3)
#define RT_MK_EACH(M) RT_MK_EACH_V(M, 0) RT_MK_EACH_V(M, 1) RT_MK_EACH_V(M, 2) RT_MK_EACH_V(M, 3) \
  RT_MK_EACH_V(M, 4) RT_MK_EACH_V(M, 5)

template <int MR, int NV>
void MicroKernel(const float* a, ptrdiff_t ars, ptrdiff_t aks, const float* b, ptrdiff_t ldb, int kc, float* c,
                 ptrdiff_t ldc, __mmask16 last, bool accumulate) {
  static_assert(MR >= 1 && MR <= 6 && NV >= 1 && NV <= 4, "tile too large for the registers");
  const __m512 z = _mm512_setzero_ps();
  RT_MK_ROW_VARS(0) RT_MK_ROW_VARS(1) RT_MK_ROW_VARS(2) RT_MK_ROW_VARS(3) RT_MK_ROW_VARS(4) RT_MK_ROW_VARS(5)
  if (accumulate) {
    RT_MK_EACH(RT_MK_LOAD)
  }
  const float *a0 = a, *a1 = a + ars, *a2 = a + 2 * ars, *a3 = a + 3 * ars, *a4 = a + 4 * ars, *a5 = a + 5 * ars;
  for (int k = 0; k < kc; ++k, b += ldb) {
    __m512 b0 = z, b1 = z, b2 = z, b3 = z;
    if constexpr (NV > 0) b0 = NV == 1 ? _mm512_maskz_loadu_ps(last, b) : _mm512_loadu_ps(b);
    if constexpr (NV > 1) b1 = NV == 2 ? _mm512_maskz_loadu_ps(last, b + 16) : _mm512_loadu_ps(b + 16);
    if constexpr (NV > 2) b2 = NV == 3 ? _mm512_maskz_loadu_ps(last, b + 32) : _mm512_loadu_ps(b + 32);
    if constexpr (NV > 3) b3 = _mm512_maskz_loadu_ps(last, b + 48);
    RT_MK_FMA_ROW(0) RT_MK_FMA_ROW(1) RT_MK_FMA_ROW(2) RT_MK_FMA_ROW(3) RT_MK_FMA_ROW(4) RT_MK_FMA_ROW(5)
  }
  RT_MK_EACH(RT_MK_STORE)
  (void)a0, (void)a1, (void)a2, (void)a3, (void)a4, (void)a5;
}

#undef RT_MK_ROW_VARS
#undef RT_MK_LOAD
#undef RT_MK_STORE
#undef RT_MK_FMA_ROW
#undef RT_MK_EACH_V
#undef RT_MK_EACH

using MicroKernelFn = void (*)(const float*, ptrdiff_t, ptrdiff_t, const float*, ptrdiff_t, int, float*, ptrdiff_t,
                               __mmask16, bool);

// The instance for a tile of mr rows and nv vectors (1 <= mr <= 6, 1 <= nv <= 4).
MicroKernelFn PickMicroKernel(int mr, int nv);

}  // namespace ringtrain::kernels::avx512
