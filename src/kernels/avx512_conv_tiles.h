// The register tiles of the direct AVX-512 convolution passes (ConvForward, the
// transposed-convolution input gradient of stride 1 and the parity-split one of larger
// strides): a tile of output pixels x filter vectors accumulates in registers while the
// window slides over the (zero-padded) input. Vectors run over the filters (NHWC).
// Pure functions of their arguments, no state: callable from any thread. Include only
// from files compiled with -mavx512f (avx512_conv*.cc).
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <utility>

#include "kernels/avx512_util.h"

namespace ringtrain::kernels::avx512::tiles {

// Where one input row of the window starts, for pixel p of a tile.
struct Geometry {
  int kh, kw, c, f;
  int row_stride;    // floats between padded input rows
  int pixel_stride;  // floats between the windows of neighbouring output pixels
  int out_stride;    // floats between neighbouring output pixels (f, or more for a strided output)
};

// y[p, fvecs] = act(bias + sum over the window of x * w) for P output pixels and one
// group of at most 32 filters (NV vectors). Named accumulators, not an array: GCC 12
// keeps an array of __m512 on the stack (see avx512_microkernel.h). Each pixel adds its
// taps in the same order whatever P, so the tiling does not change the bits.
// PS: the pixel stride when known at compile time (0: g.pixel_stride), so the P
// broadcasts address one register with constant offsets instead of spilling P pointers.
template <int P, int NV, int PS>
void ForwardTile(const Geometry& g, const float* x, const float* w, const float* bias, bool relu, float* y,
                 __mmask16 last) {
  static_assert(P <= 16 && NV <= 2 && P * NV <= 28, "tile too large for the registers");
  const __m512 z = _mm512_setzero_ps();
#define RT_ACC(p) __m512 a##p##0 = z, a##p##1 = z;
  RT_ACC(0) RT_ACC(1) RT_ACC(2) RT_ACC(3) RT_ACC(4) RT_ACC(5) RT_ACC(6) RT_ACC(7) RT_ACC(8) RT_ACC(9) RT_ACC(10)
  RT_ACC(11) RT_ACC(12) RT_ACC(13) RT_ACC(14) RT_ACC(15)
#undef RT_ACC
  const int row_len = g.kw * g.c;
  const int ps = PS != 0 ? PS : g.pixel_stride;
  for (int i = 0; i < g.kh; ++i) {
    const float* xr = x + static_cast<size_t>(i) * g.row_stride;
    const float* wt = w + static_cast<size_t>(i) * row_len * g.f;
    for (int t = 0; t < row_len; ++t, wt += g.f) {
      const __m512 b0 = NV == 1 ? _mm512_maskz_loadu_ps(last, wt) : _mm512_loadu_ps(wt);
      const __m512 b1 = NV == 2 ? _mm512_maskz_loadu_ps(last, wt + 16) : z;
#define RT_PX(p)                                                   \
  if constexpr (P > p) {                                           \
    const __m512 sv = _mm512_set1_ps(xr[p * ps + t]);              \
    a##p##0 = _mm512_fmadd_ps(sv, b0, a##p##0);                    \
    if constexpr (NV > 1) a##p##1 = _mm512_fmadd_ps(sv, b1, a##p##1); \
  }
      RT_PX(0) RT_PX(1) RT_PX(2) RT_PX(3) RT_PX(4) RT_PX(5) RT_PX(6) RT_PX(7) RT_PX(8) RT_PX(9) RT_PX(10)
      RT_PX(11) RT_PX(12) RT_PX(13) RT_PX(14) RT_PX(15)
#undef RT_PX
    }
  }
  const __m512 bv0 = bias == nullptr ? z : NV == 1 ? _mm512_maskz_loadu_ps(last, bias) : _mm512_loadu_ps(bias);
  const __m512 bv1 = bias == nullptr || NV < 2 ? z : _mm512_maskz_loadu_ps(last, bias + 16);
#define RT_OUT(p)                                                                      \
  if constexpr (P > p) {                                                               \
    __m512 r0 = _mm512_add_ps(a##p##0, bv0);                                           \
    if (relu) r0 = _mm512_max_ps(r0, z);                                               \
    float* yp = y + static_cast<size_t>(p) * g.out_stride;                             \
    if constexpr (NV == 1) {                                                           \
      _mm512_mask_storeu_ps(yp, last, r0);                                             \
    } else {                                                                           \
      __m512 r1 = _mm512_add_ps(a##p##1, bv1);                                         \
      if (relu) r1 = _mm512_max_ps(r1, z);                                             \
      _mm512_storeu_ps(yp, r0);                                                        \
      _mm512_mask_storeu_ps(yp + 16, last, r1);                                        \
    }                                                                                  \
  }
  RT_OUT(0) RT_OUT(1) RT_OUT(2) RT_OUT(3) RT_OUT(4) RT_OUT(5) RT_OUT(6) RT_OUT(7) RT_OUT(8) RT_OUT(9) RT_OUT(10)
  RT_OUT(11) RT_OUT(12) RT_OUT(13) RT_OUT(14) RT_OUT(15)
#undef RT_OUT
}

// ForwardTile for 3-wide stride-1 windows and one filter vector: each broadcast input
// value x[q, c] feeds the three pixels whose windows hold it (q - 0, q - 1, q - 2, with
// the three weight vectors of that kernel row and channel), so a tile of P pixels loads
// P + 2 values and 3 weight vectors per 3P FMAs where ForwardTile loads P + 1 per P:
// the loads, not the FMAs, bound ForwardTile at one vector. Each pixel adds its taps in
// the order kernel row, channel, kernel column, whatever P.
// KW = 2 does the same for 2-wide windows (the strided input gradient's sub-kernels).
template <int P, int PS, int KW>
void ForwardTileKw(const Geometry& g, const float* x, const float* w, const float* bias, bool relu, float* y,
                   __mmask16 last) {
  static_assert(P <= 16 && (KW == 2 || KW == 3), "tile too large for the registers");
  const __m512 z = _mm512_setzero_ps();
#define RT_ACC(p) __m512 a##p##0 = z;
  RT_ACC(0) RT_ACC(1) RT_ACC(2) RT_ACC(3) RT_ACC(4) RT_ACC(5) RT_ACC(6) RT_ACC(7) RT_ACC(8) RT_ACC(9) RT_ACC(10)
  RT_ACC(11) RT_ACC(12) RT_ACC(13) RT_ACC(14) RT_ACC(15)
#undef RT_ACC
  const int ps = PS != 0 ? PS : g.pixel_stride;
  const size_t wrow = static_cast<size_t>(g.c) * g.f;  // floats between kernel columns
  for (int i = 0; i < g.kh; ++i) {
    const float* xr = x + static_cast<size_t>(i) * g.row_stride;
    const float* wt = w + static_cast<size_t>(i) * KW * wrow;
    for (int c = 0; c < g.c; ++c, wt += g.f) {
      const __m512 w0 = _mm512_maskz_loadu_ps(last, wt);
      const __m512 w1 = _mm512_maskz_loadu_ps(last, wt + wrow);
      const __m512 w2 = KW == 3 ? _mm512_maskz_loadu_ps(last, wt + 2 * wrow) : z;
#define RT_Q(q, A0, A1, A2)                                              \
  if constexpr (q < P + KW - 1) {                                        \
    const __m512 sv = _mm512_set1_ps(xr[q * ps + c]);                    \
    if constexpr (q < P) A0 = _mm512_fmadd_ps(sv, w0, A0);               \
    if constexpr (q >= 1 && q - 1 < P) A1 = _mm512_fmadd_ps(sv, w1, A1); \
    if constexpr (KW == 3 && q >= 2 && q - 2 < P) A2 = _mm512_fmadd_ps(sv, w2, A2); \
  }
      RT_Q(0, a00, a00, a00)
      RT_Q(1, a10, a00, a00)
      RT_Q(2, a20, a10, a00)
      RT_Q(3, a30, a20, a10)
      RT_Q(4, a40, a30, a20)
      RT_Q(5, a50, a40, a30)
      RT_Q(6, a60, a50, a40)
      RT_Q(7, a70, a60, a50)
      RT_Q(8, a80, a70, a60)
      RT_Q(9, a90, a80, a70)
      RT_Q(10, a100, a90, a80)
      RT_Q(11, a110, a100, a90)
      RT_Q(12, a120, a110, a100)
      RT_Q(13, a130, a120, a110)
      RT_Q(14, a140, a130, a120)
      RT_Q(15, a150, a140, a130)
      RT_Q(16, a00, a150, a140)
      RT_Q(17, a00, a00, a150)
#undef RT_Q
    }
  }
  const __m512 bv = bias == nullptr ? z : _mm512_maskz_loadu_ps(last, bias);
#define RT_OUT(p)                                                                       \
  if constexpr (P > p) {                                                                \
    __m512 r0 = _mm512_add_ps(a##p##0, bv);                                             \
    if (relu) r0 = _mm512_max_ps(r0, z);                                                \
    _mm512_mask_storeu_ps(y + static_cast<size_t>(p) * g.out_stride, last, r0);         \
  }
  RT_OUT(0) RT_OUT(1) RT_OUT(2) RT_OUT(3) RT_OUT(4) RT_OUT(5) RT_OUT(6) RT_OUT(7) RT_OUT(8) RT_OUT(9) RT_OUT(10)
  RT_OUT(11) RT_OUT(12) RT_OUT(13) RT_OUT(14) RT_OUT(15)
#undef RT_OUT
}

using ForwardFn = void (*)(const Geometry&, const float*, const float*, const float*, bool, float*, __mmask16);

// The widest tiles: one filter vector has only one FMA per broadcast, so it takes more
// pixels (16 chains hide the FMA latency); two vectors fill 24 of the 32 registers.
constexpr int kMaxPixels1 = 16;
constexpr int kMaxPixels2 = 12;

// NV 3 and 4 stand for ForwardTileKw<P, PS, 3> and <P, PS, 2> (one vector, a 3- or
// 2-wide stride-1 window).
template <int NV, int PS, int... Ps>
ForwardFn PickForwardIn(int p, std::integer_sequence<int, Ps...>) {
  ForwardFn fn = nullptr;
  if constexpr (NV == 3 || NV == 4) {
    ((fn = p == Ps + 1 ? &ForwardTileKw<Ps + 1, PS, NV == 3 ? 3 : 2> : fn), ...);
  } else {
    ((fn = p == Ps + 1 ? &ForwardTile<Ps + 1, NV, PS> : fn), ...);
  }
  return fn;
}

template <int PS>
ForwardFn PickForwardPs(int nv, int p) {
  if (nv == 3) return PickForwardIn<3, PS>(p, std::make_integer_sequence<int, kMaxPixels1>());
  if (nv == 4) return PickForwardIn<4, PS>(p, std::make_integer_sequence<int, kMaxPixels1>());
  return nv == 1 ? PickForwardIn<1, PS>(p, std::make_integer_sequence<int, kMaxPixels1>())
                 : PickForwardIn<2, PS>(p, std::make_integer_sequence<int, kMaxPixels2>());
}

// The pixel strides of ResNet-like layers (c = 3 and 16 to 64 channels, strides 1 and 2)
// get their own instances.
inline ForwardFn PickForward(int nv, int p, int pixel_stride) {
  switch (pixel_stride) {
    case 3: return PickForwardPs<3>(nv, p);
    case 16: return PickForwardPs<16>(nv, p);
    case 32: return PickForwardPs<32>(nv, p);
    case 64: return PickForwardPs<64>(nv, p);
    case 128: return PickForwardPs<128>(nv, p);
    default: return PickForwardPs<0>(nv, p);
  }
}

// Splits a row of `width` output pixels into tiles of at most `most`, as even as can be
// (32 pixels by 12: 11, 11, 10): calls tile(first pixel, count).
template <typename Tile>
void ForEachPixelTile(int width, int most, Tile&& tile) {
  const int tiles = (width + most - 1) / most;
  const int base = width / tiles, extra = width % tiles;
  for (int k = 0, p0 = 0; k < tiles; ++k) {
    const int p = base + (k < extra ? 1 : 0);
    tile(p0, p);
    p0 += p;
  }
}

constexpr int kFilterGroup = 32;  // filters per tile: two vectors


// One group of filters starting at f0: its vector count and the last vector's mask.
struct FilterGroup {
  int nv;
  __mmask16 last;
};

inline FilterGroup GroupAt(int filters, int f0) {
  const int cols = std::min(kFilterGroup, filters - f0);
  const int nv = (cols + 15) / 16;
  return {nv, TailMask(cols - 16 * (nv - 1))};
}

}  // namespace ringtrain::kernels::avx512::tiles
