// Small AVX-512 helpers shared by the avx512_*.cc kernels (include only from files
// compiled with -mavx512f).
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>

namespace ringtrain::kernels::avx512 {

// The first n lanes: none for n <= 0, all 16 for n >= 16.
inline __mmask16 TailMask(int n) {
  if (n <= 0) return 0;
  return n >= 16 ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << n) - 1u);
}

inline int PopCount(__mmask16 m) { return __builtin_popcount(static_cast<unsigned>(m)); }

// A 16-float column vector; the last one of a tile may be partial (masked lanes read 0).
inline __m512 LoadCols(const float* p, bool is_last, __mmask16 last) {
  return is_last ? _mm512_maskz_loadu_ps(last, p) : _mm512_loadu_ps(p);
}

inline void StoreCols(float* p, __m512 v, bool is_last, __mmask16 last) {
  if (is_last) {
    _mm512_mask_storeu_ps(p, last, v);
  } else {
    _mm512_storeu_ps(p, v);
  }
}

// y[r, 0..cols) = act(y[r, 0..cols) + bias[n0 ..]) for `rows` rows of stride ld.
inline void BiasActivationRows(float* y, int rows, int ld, int n0, int cols, const float* bias, bool relu) {
  if (bias == nullptr && !relu) return;
  const __m512 zero = _mm512_setzero_ps();
  for (int r = 0; r < rows; ++r) {
    float* row = y + static_cast<size_t>(r) * ld;
    for (int c = 0; c < cols; c += 16) {
      const __mmask16 m = TailMask(cols - c);
      __m512 v = _mm512_maskz_loadu_ps(m, row + c);
      if (bias != nullptr) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(m, bias + n0 + c));
      if (relu) v = _mm512_max_ps(v, zero);
      _mm512_mask_storeu_ps(row + c, m, v);
    }
  }
}

// Passes that stream arrays larger than the caches fetch ahead themselves: on the AMD EPYC
// machines measured, a pass over two 4 MB arrays that reads them without this ran at a
// third of the bandwidth (the hardware prefetcher did not keep up; 770 us against 300 us
// with it). FetchAhead(p) asks for the line kAheadBytes past p, which may lie past the
// array's end (a prefetch never faults; the address is formed as an integer, not a pointer).
constexpr uintptr_t kAheadBytes = 2048;
// Fetches the line at address a into all cache levels.
inline void FetchAddress(uintptr_t a) { _mm_prefetch(reinterpret_cast<const char*>(a), _MM_HINT_T0); }
inline void FetchAhead(const float* p) { FetchAddress(reinterpret_cast<uintptr_t>(p) + kAheadBytes); }

// The arrays one streaming pass reads or writes (null entries skipped).
struct Streams {
  const float* p[4] = {nullptr, nullptr, nullptr, nullptr};
};
// FetchAhead at element i of each stream.
inline void FetchAhead(const Streams& s, size_t i) {
  for (const float* q : s.p) {
    if (q != nullptr) FetchAhead(q + i);
  }
}

// In-register transpose: afterwards r[i] lane j holds what r[j] lane i held.
inline void Transpose16x16(__m512 r[16]) {
  __m512 t[16];
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  // s[4i + j], 128-bit lane L: rows 4i..4i+3 of column 4L + j.
  __m512 s[16];
  for (int i = 0; i < 4; ++i) {
    s[4 * i + 0] = _mm512_shuffle_ps(t[4 * i + 0], t[4 * i + 2], 0x44);
    s[4 * i + 1] = _mm512_shuffle_ps(t[4 * i + 0], t[4 * i + 2], 0xEE);
    s[4 * i + 2] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0x44);
    s[4 * i + 3] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0xEE);
  }
  for (int j = 0; j < 4; ++j) {
    const __m512 u = _mm512_shuffle_f32x4(s[j], s[4 + j], 0x88);
    const __m512 v = _mm512_shuffle_f32x4(s[j], s[4 + j], 0xDD);
    const __m512 u2 = _mm512_shuffle_f32x4(s[8 + j], s[12 + j], 0x88);
    const __m512 v2 = _mm512_shuffle_f32x4(s[8 + j], s[12 + j], 0xDD);
    r[j] = _mm512_shuffle_f32x4(u, u2, 0x88);
    r[8 + j] = _mm512_shuffle_f32x4(u, u2, 0xDD);
    r[4 + j] = _mm512_shuffle_f32x4(v, v2, 0x88);
    r[12 + j] = _mm512_shuffle_f32x4(v, v2, 0xDD);
  }
}

}  // namespace ringtrain::kernels::avx512
