// AVX-512 convolution passes, direct (no im2col): vectors run over the filters, so a
// tile of output pixels x filter vectors accumulates in registers while the window
// slides over the (zero-padded) input.
#include <immintrin.h>

#include <algorithm>
#include <utility>

#include "kernels/avx512_util.h"
#include "kernels/impl.h"
#include "kernels/thread_pool.h"

namespace ringtrain::kernels::avx512 {
namespace {

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
ForwardFn PickForward(int nv, int p, int pixel_stride) {
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
constexpr int kTapsPerPass = 12;  // filter-gradient taps accumulated at once
constexpr int kExamplesPerPartial = 8;  // filter-gradient examples summed in registers

// One group of filters starting at f0: its vector count and the last vector's mask.
struct FilterGroup {
  int nv;
  __mmask16 last;
};

FilterGroup GroupAt(int filters, int f0) {
  const int cols = std::min(kFilterGroup, filters - f0);
  const int nv = (cols + 15) / 16;
  return {nv, TailMask(cols - 16 * (nv - 1))};
}

// Output positions run row by row: row oh's windows start at x + oh * row_step, and
// neighbours are pixel_step apart.
// A pass runs over `examples` examples, x_step floats apart in the input and o_step in
// the gradients.
struct Positions {
  int out_h, out_w, row_step, pixel_step;
  int examples;
  size_t x_step, o_step;
};

// Filter gradients of TG taps (tap_off[t]: the tap's offset inside a window; tap_row[t]:
// its row in the [taps, f] kernel matrix) for one group of at most 32 filters, with
// named accumulators (see ForwardTile) and the relu mask and the bias gradient fused in:
// the first pass over the taps reads dy (and y) and derives the masked gradient itself,
// storing it only when `dstore` is set; later passes read it back from `dread`.
struct GradIo {
  const float* dy;      // first group: the output gradient
  const float* y;       // first group with relu: the layer's output
  float* dstore;        // first group: where to keep the masked gradient, or null
  const float* dread;   // later groups: the masked gradient
  float* db;            // first group: this example's bias gradient
};

template <int TG, int NV>
void FilterGradTaps(const int* tap_off, const float* x, const Positions& pos, const GradIo& io, bool first,
                      bool relu, int f, float* partial, const int* tap_row, int taps_here, __mmask16 last) {
  static_assert(TG <= 12 && NV <= 2, "tile too large");
  const __m512 z = _mm512_setzero_ps();
  __m512 c00 = z, c01 = z, c10 = z, c11 = z, c20 = z, c21 = z, c30 = z, c31 = z, c40 = z, c41 = z, c50 = z, c51 = z,
         c60 = z, c61 = z, c70 = z, c71 = z, c80 = z, c81 = z, c90 = z, c91 = z, c100 = z, c101 = z, c110 = z,
         c111 = z, db0 = z, db1 = z;
  const __mmask16 m0 = NV == 1 ? last : static_cast<__mmask16>(0xFFFF);
  const __mmask16 m1 = NV == 2 ? last : static_cast<__mmask16>(0);
  for (int e = 0; e < pos.examples; ++e) {
  size_t o = e * pos.o_step;  // this position's offset in the gradient arrays
  for (int oh = 0; oh < pos.out_h; ++oh) {
    const float* xrow = x + e * pos.x_step + static_cast<size_t>(oh) * pos.row_step;
    for (int ow = 0; ow < pos.out_w; ++ow, o += static_cast<size_t>(f)) {
      __m512 d0, d1 = z;
      if (first) {
        d0 = _mm512_maskz_loadu_ps(m0, io.dy + o);
        if (NV > 1) d1 = _mm512_maskz_loadu_ps(m1, io.dy + o + 16);
        if (relu) {
          d0 = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(_mm512_maskz_loadu_ps(m0, io.y + o), z, _CMP_GT_OQ), d0);
          if (NV > 1) {
            d1 = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(_mm512_maskz_loadu_ps(m1, io.y + o + 16), z, _CMP_GT_OQ), d1);
          }
        }
        if (io.dstore != nullptr) {
          _mm512_mask_storeu_ps(io.dstore + o, m0, d0);
          if (NV > 1) _mm512_mask_storeu_ps(io.dstore + o + 16, m1, d1);
        }
        db0 = _mm512_add_ps(db0, d0);
        if (NV > 1) db1 = _mm512_add_ps(db1, d1);
      } else {
        d0 = _mm512_maskz_loadu_ps(m0, io.dread + o);
        if (NV > 1) d1 = _mm512_maskz_loadu_ps(m1, io.dread + o + 16);
      }
      const float* xq = xrow + ow * pos.pixel_step;
#define RT_TAP(t)                                                      \
  if constexpr (TG > t) {                                              \
    const __m512 sv = _mm512_set1_ps(xq[tap_off[t]]);                  \
    c##t##0 = _mm512_fmadd_ps(sv, d0, c##t##0);                        \
    if constexpr (NV > 1) c##t##1 = _mm512_fmadd_ps(sv, d1, c##t##1);  \
  }
      RT_TAP(0) RT_TAP(1) RT_TAP(2) RT_TAP(3) RT_TAP(4) RT_TAP(5) RT_TAP(6) RT_TAP(7) RT_TAP(8) RT_TAP(9) RT_TAP(10)
      RT_TAP(11)
#undef RT_TAP
    }
  }
  }
#define RT_KEEP(t)                                                                              \
  if constexpr (TG > t) {                                                                       \
    if (t < taps_here) {                                                                        \
      float* row = partial + static_cast<size_t>(tap_row[t]) * f;                               \
      _mm512_mask_storeu_ps(row, m0, c##t##0);                                                  \
      if constexpr (NV > 1) _mm512_mask_storeu_ps(row + 16, m1, c##t##1);                       \
    }                                                                                           \
  }
  RT_KEEP(0) RT_KEEP(1) RT_KEEP(2) RT_KEEP(3) RT_KEEP(4) RT_KEEP(5) RT_KEEP(6) RT_KEEP(7) RT_KEEP(8) RT_KEEP(9)
  RT_KEEP(10) RT_KEEP(11)
#undef RT_KEEP
  if (first) {
    _mm512_mask_storeu_ps(io.db, m0, db0);
    if (NV > 1) _mm512_mask_storeu_ps(io.db + 16, m1, db1);
  }
}

using FilterGradFn = void (*)(const int*, const float*, const Positions&, const GradIo&, bool, bool, int,
                                    float*, const int*, int, __mmask16);

template <int NV>
FilterGradFn PickFilterGrad(int tg) {
  switch (tg) {
    case 1: return &FilterGradTaps<1, NV>;
    case 2: return &FilterGradTaps<2, NV>;
    case 3: return &FilterGradTaps<3, NV>;
    case 4: return &FilterGradTaps<4, NV>;
    case 5: return &FilterGradTaps<5, NV>;
    case 6: return &FilterGradTaps<6, NV>;
    case 7: return &FilterGradTaps<7, NV>;
    case 8: return &FilterGradTaps<8, NV>;
    case 9: return &FilterGradTaps<9, NV>;
    case 10: return &FilterGradTaps<10, NV>;
    case 11: return &FilterGradTaps<11, NV>;
    default: return &FilterGradTaps<12, NV>;
  }
}


// Filter gradients for a 3-wide stride-1 window: the taps (i, 0..2, c0..c0+CC) of one
// kernel row i for one group of at most 32 filters (NV vectors). The output positions
// of a row slide past input column q; x[q, c] is broadcast once and feeds the three taps
// (j = 0, 1, 2) of the positions q, q - 1, q - 2, whose gradients sit in registers, so
// a step loads CC values and NV gradient vectors for 3 CC NV FMAs. Every dw entry adds
// its positions in row-major order, as FilterGradTaps does. As there, the first pass
// over the example derives the masked gradient (and the bias gradient) itself.
//
// S = 2 (stride 2): input column 2p holds tap j = 0 of position p and j = 2 of p - 1,
// column 2p + 1 tap j = 1 of p: two broadcasts feed three taps.
template <int CC, int NV, int S>
void FilterGradKw3(const float* x, const Positions& pos, const GradIo& io, bool first, bool relu, int f, int c,
                   float* partial, __mmask16 last) {
  static_assert(CC <= 8 && NV <= 2 && CC * NV <= 8, "tile too large for the registers");
  const __m512 z = _mm512_setzero_ps();
  __m512 c000 = z, c001 = z, c010 = z, c011 = z, c020 = z, c021 = z; __m512 c100 = z, c101 = z, c110 = z, c111 = z, c120 = z, c121 = z; __m512 c200 = z, c201 = z, c210 = z, c211 = z, c220 = z, c221 = z; __m512 c300 = z, c301 = z, c310 = z, c311 = z, c320 = z, c321 = z; __m512 c400 = z, c401 = z, c410 = z, c411 = z, c420 = z, c421 = z; __m512 c500 = z, c501 = z, c510 = z, c511 = z, c520 = z, c521 = z; __m512 c600 = z, c601 = z, c610 = z, c611 = z, c620 = z, c621 = z; __m512 c700 = z, c701 = z, c710 = z, c711 = z, c720 = z, c721 = z;
  __m512 db0 = z, db1 = z;
  const __mmask16 m0 = NV == 1 ? last : static_cast<__mmask16>(0xFFFF);
  const __mmask16 m1 = NV == 2 ? last : static_cast<__mmask16>(0);
  for (int e = 0; e < pos.examples; ++e) {
  for (int oh = 0; oh < pos.out_h; ++oh) {
    const float* xrow = x + e * pos.x_step + static_cast<size_t>(oh) * pos.row_step;
    const size_t orow = e * pos.o_step + static_cast<size_t>(oh) * pos.out_w * f;
    __m512 p10 = z, p11 = z, p20 = z, p21 = z;  // the gradients at q - 1 and q - 2
    for (int q = 0; q < pos.out_w + 3 - S; ++q) {
      __m512 d0 = z, d1 = z;
      if (q < pos.out_w) {
        const size_t o = orow + static_cast<size_t>(q) * f;
        if (first) {
          d0 = _mm512_maskz_loadu_ps(m0, io.dy + o);
          if (NV > 1) d1 = _mm512_maskz_loadu_ps(m1, io.dy + o + 16);
          if (relu) {
            d0 = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(_mm512_maskz_loadu_ps(m0, io.y + o), z, _CMP_GT_OQ), d0);
            if (NV > 1) {
              d1 = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(_mm512_maskz_loadu_ps(m1, io.y + o + 16), z, _CMP_GT_OQ),
                                       d1);
            }
          }
          if (io.dstore != nullptr) {
            _mm512_mask_storeu_ps(io.dstore + o, m0, d0);
            if (NV > 1) _mm512_mask_storeu_ps(io.dstore + o + 16, m1, d1);
          }
          db0 = _mm512_add_ps(db0, d0);
          if (NV > 1) db1 = _mm512_add_ps(db1, d1);
        } else {
          d0 = _mm512_maskz_loadu_ps(m0, io.dread + o);
          if (NV > 1) d1 = _mm512_maskz_loadu_ps(m1, io.dread + o + 16);
        }
      }
      const float* xq = xrow + static_cast<size_t>(q) * pos.pixel_step;
#define RT_CH(cc, A00, A01, A10, A11, A20, A21)                       \
  if constexpr (CC > cc) {                                            \
    const __m512 sv = _mm512_set1_ps(xq[cc]);                         \
    A00 = _mm512_fmadd_ps(sv, d0, A00);                               \
    if constexpr (S == 1) A10 = _mm512_fmadd_ps(sv, p10, A10);        \
    A20 = _mm512_fmadd_ps(sv, S == 1 ? p20 : p10, A20);               \
    if constexpr (NV > 1) {                                           \
      A01 = _mm512_fmadd_ps(sv, d1, A01);                             \
      if constexpr (S == 1) A11 = _mm512_fmadd_ps(sv, p11, A11);      \
      A21 = _mm512_fmadd_ps(sv, S == 1 ? p21 : p11, A21);             \
    }                                                                 \
  }
      RT_CH(0, c000, c001, c010, c011, c020, c021)
      RT_CH(1, c100, c101, c110, c111, c120, c121)
      RT_CH(2, c200, c201, c210, c211, c220, c221)
      RT_CH(3, c300, c301, c310, c311, c320, c321)
      RT_CH(4, c400, c401, c410, c411, c420, c421)
      RT_CH(5, c500, c501, c510, c511, c520, c521)
      RT_CH(6, c600, c601, c610, c611, c620, c621)
      RT_CH(7, c700, c701, c710, c711, c720, c721)
#undef RT_CH
      if constexpr (S == 2) {
        if (q < pos.out_w) {
          const float* xo = xq + c;
#define RT_CH(cc, A00, A01, A10, A11, A20, A21)                       \
  if constexpr (CC > cc) {                                            \
    const __m512 sv = _mm512_set1_ps(xo[cc]);                         \
    A10 = _mm512_fmadd_ps(sv, d0, A10);                               \
    if constexpr (NV > 1) A11 = _mm512_fmadd_ps(sv, d1, A11);         \
  }
      RT_CH(0, c000, c001, c010, c011, c020, c021)
      RT_CH(1, c100, c101, c110, c111, c120, c121)
      RT_CH(2, c200, c201, c210, c211, c220, c221)
      RT_CH(3, c300, c301, c310, c311, c320, c321)
      RT_CH(4, c400, c401, c410, c411, c420, c421)
      RT_CH(5, c500, c501, c510, c511, c520, c521)
      RT_CH(6, c600, c601, c610, c611, c620, c621)
      RT_CH(7, c700, c701, c710, c711, c720, c721)
#undef RT_CH
        }
      }
      p20 = p10, p21 = p11, p10 = d0, p11 = d1;
    }
  }
  }
  // tap (i, j, c0 + cc) is row j * c + cc past `partial`'s row
#define RT_KEEP(cc, j, A0, A1)                                                      \
  if constexpr (CC > cc) {                                                          \
    float* row = partial + static_cast<size_t>(j * c + cc) * f;                     \
    _mm512_mask_storeu_ps(row, m0, A0);                                             \
    if constexpr (NV > 1) _mm512_mask_storeu_ps(row + 16, m1, A1);                  \
  }
  RT_KEEP(0, 0, c000, c001)
  RT_KEEP(0, 1, c010, c011)
  RT_KEEP(0, 2, c020, c021)
  RT_KEEP(1, 0, c100, c101)
  RT_KEEP(1, 1, c110, c111)
  RT_KEEP(1, 2, c120, c121)
  RT_KEEP(2, 0, c200, c201)
  RT_KEEP(2, 1, c210, c211)
  RT_KEEP(2, 2, c220, c221)
  RT_KEEP(3, 0, c300, c301)
  RT_KEEP(3, 1, c310, c311)
  RT_KEEP(3, 2, c320, c321)
  RT_KEEP(4, 0, c400, c401)
  RT_KEEP(4, 1, c410, c411)
  RT_KEEP(4, 2, c420, c421)
  RT_KEEP(5, 0, c500, c501)
  RT_KEEP(5, 1, c510, c511)
  RT_KEEP(5, 2, c520, c521)
  RT_KEEP(6, 0, c600, c601)
  RT_KEEP(6, 1, c610, c611)
  RT_KEEP(6, 2, c620, c621)
  RT_KEEP(7, 0, c700, c701)
  RT_KEEP(7, 1, c710, c711)
  RT_KEEP(7, 2, c720, c721)
#undef RT_KEEP
  if (first) {
    _mm512_mask_storeu_ps(io.db, m0, db0);
    if (NV > 1) _mm512_mask_storeu_ps(io.db + 16, m1, db1);
  }
}

using FilterGradKw3Fn = void (*)(const float*, const Positions&, const GradIo&, bool, bool, int, int, float*,
                                 __mmask16);

// Channels per pass: 8 for one filter vector, 4 for two (24 accumulators either way).
template <int S>
FilterGradKw3Fn PickFilterGradKw3(int nv, int cc) {
  switch (nv * 16 + cc) {
    case 16 + 1: return S == 1 ? &FilterGradKw3<1, 1, 1> : &FilterGradKw3<1, 1, 2>;
    case 16 + 2: return S == 1 ? &FilterGradKw3<2, 1, 1> : &FilterGradKw3<2, 1, 2>;
    case 16 + 3: return S == 1 ? &FilterGradKw3<3, 1, 1> : &FilterGradKw3<3, 1, 2>;
    case 16 + 4: return S == 1 ? &FilterGradKw3<4, 1, 1> : &FilterGradKw3<4, 1, 2>;
    case 16 + 5: return S == 1 ? &FilterGradKw3<5, 1, 1> : &FilterGradKw3<5, 1, 2>;
    case 16 + 6: return S == 1 ? &FilterGradKw3<6, 1, 1> : &FilterGradKw3<6, 1, 2>;
    case 16 + 7: return S == 1 ? &FilterGradKw3<7, 1, 1> : &FilterGradKw3<7, 1, 2>;
    case 16 + 8: return S == 1 ? &FilterGradKw3<8, 1, 1> : &FilterGradKw3<8, 1, 2>;
    case 32 + 1: return S == 1 ? &FilterGradKw3<1, 2, 1> : &FilterGradKw3<1, 2, 2>;
    case 32 + 2: return S == 1 ? &FilterGradKw3<2, 2, 1> : &FilterGradKw3<2, 2, 2>;
    case 32 + 3: return S == 1 ? &FilterGradKw3<3, 2, 1> : &FilterGradKw3<3, 2, 2>;
    default: return S == 1 ? &FilterGradKw3<4, 2, 1> : &FilterGradKw3<4, 2, 2>;
  }
}

}  // namespace

void ConvForward(const Window& g, int filters, const float* x, int batch, const float* w, const float* bias,
                 bool relu, float* y, float* scratch) {
  int ph, pw;
  const float* xp = PadInput(g, x, batch, scratch, &ph, &pw);
  const Geometry geo{g.kh, g.kw, g.c, filters, pw * g.c, g.stride_w * g.c, filters};
  const bool kw3 = g.kw == 3 && g.stride_w == 1;
  ParallelFor(static_cast<int64_t>(batch) * g.out_h, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      const int n = static_cast<int>(row / g.out_h), oh = static_cast<int>(row % g.out_h);
      const float* xrow = xp + (static_cast<size_t>(n) * ph + static_cast<size_t>(oh) * g.stride_h) * pw * g.c;
      float* yrow = y + (static_cast<size_t>(n) * g.out_h + oh) * g.out_w * filters;
      for (int f0 = 0; f0 < filters; f0 += kFilterGroup) {
        const FilterGroup fg = GroupAt(filters, f0);
        const int kind = fg.nv == 2 ? 2 : kw3 ? 3 : 1;
        ForEachPixelTile(g.out_w, fg.nv == 1 ? kMaxPixels1 : kMaxPixels2, [&](int ow0, int p) {
          PickForward(kind, p, geo.pixel_stride)(geo, xrow + static_cast<size_t>(ow0) * geo.pixel_stride, w + f0,
                                bias != nullptr ? bias + f0 : nullptr, relu,
                                yrow + static_cast<size_t>(ow0) * filters + f0, fg.last);
        });
      }
    }
  });
}

void ConvFilterGrad(const Window& g, int filters, const float* x, const float* y, const float* dy, int batch,
                    bool relu, float* dw, float* db, float* dpre, float* scratch) {
  ConvFilterGradImpl(g, filters, x, y, dy, batch, relu, dw, db, dpre, scratch, /*padded_ready=*/false);
}

void ConvFilterGradImpl(const Window& g, int filters, const float* x, const float* y, const float* dy, int batch,
                        bool relu, float* dw, float* db, float* dpre, float* scratch, bool padded_ready) {
  const int taps = g.kh * g.kw * g.c;
  const size_t per_example = static_cast<size_t>(g.out_h) * g.out_w * filters;
  // scratch: [padded input][masked gradient if the caller wants none][per-example partials]
  int ph, pw;
  const float* xp =
      padded_ready ? PaddedView(g, x, scratch, &ph, &pw) : PadInput(g, x, batch, scratch, &ph, &pw);
  float* rest = scratch + PaddedInputSize(g, batch);
  float* d = dpre;
  if (d == nullptr) {
    d = rest;
    rest += per_example * batch;
  }
  const size_t partial_size = static_cast<size_t>(taps + 1) * filters;  // dw then db
  float* partials = rest;
  // Examples go in blocks of kExamplesPerPartial (the last may be short), each summed
  // in registers into one partial.
  const int blocks = (batch + kExamplesPerPartial - 1) / kExamplesPerPartial;
  const size_t x_step = static_cast<size_t>(ph) * pw * g.c;
  // Tap t = (i, j, c) sits at this offset inside a window.
  auto tap_offset = [&](int t) { return ((t / (g.kw * g.c)) * pw + (t / g.c) % g.kw) * g.c + t % g.c; };
  const int tg = std::min(kTapsPerPass, taps);
  // 3-wide windows of stride 1 or 2 take FilterGradKw3, a kernel row and `cc` channels a pass.
  const bool kw3 = g.kw == 3 && (g.stride_w == 1 || g.stride_w == 2);
  const int cc_most = filters > 16 ? 4 : 8;
  const bool one_pass = kw3 ? g.kh == 1 && g.c <= cc_most : taps <= tg;
  // The masked gradient is kept only when a later pass or the caller reads it.
  const bool keep_d = dpre != nullptr || !one_pass;
  // One partial sum per block of examples, reduced below in block order: the bits do
  // not depend on how the blocks are split over threads.
  ParallelFor(blocks, [&](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; ++b) {
      const int n = static_cast<int>(b) * kExamplesPerPartial;
      const Positions pos{g.out_h, g.out_w, g.stride_h * pw * g.c, g.stride_w * g.c,
                          std::min(kExamplesPerPartial, batch - n), x_step, per_example};
      const size_t base = static_cast<size_t>(n) * per_example;
      float* part = partials + static_cast<size_t>(b) * partial_size;
      const float* xn = xp + static_cast<size_t>(n) * x_step;
      for (int f0 = 0; f0 < filters; f0 += kFilterGroup) {
        const FilterGroup fg = GroupAt(filters, f0);
        const GradIo io{dy + base + f0, y == nullptr ? nullptr : y + base + f0, keep_d ? d + base + f0 : nullptr,
                        d + base + f0, part + static_cast<size_t>(taps) * filters + f0};
        if (kw3) {
          for (int i = 0; i < g.kh; ++i) {
            for (int c0 = 0; c0 < g.c; c0 += cc_most) {
              const int cc = std::min(cc_most, g.c - c0);
              (g.stride_w == 1 ? PickFilterGradKw3<1>(fg.nv, cc) : PickFilterGradKw3<2>(fg.nv, cc))(xn + static_cast<size_t>(i) * pw * g.c + c0, pos, io, i == 0 && c0 == 0,
                                          relu, filters, g.c,
                                          part + (static_cast<size_t>(i) * 3 * g.c + c0) * filters + f0, fg.last);
            }
          }
          continue;
        }
        for (int t0 = 0; t0 < taps; t0 += tg) {
          const int here = std::min(tg, taps - t0);
          int off[kTapsPerPass], row[kTapsPerPass];
          for (int t = 0; t < tg; ++t) {
            const int src = t0 + std::min(t, here - 1);  // padding taps repeat the last; not stored
            off[t] = tap_offset(src);
            row[t] = src;
          }
          const FilterGradFn fn = fg.nv == 1 ? PickFilterGrad<1>(tg) : PickFilterGrad<2>(tg);
          fn(off, xn, pos, io, t0 == 0, relu, filters, part + f0, row, here, fg.last);
        }
      }
    }
  });
  const size_t total = static_cast<size_t>(taps) * filters;
  for (size_t k = 0; k < total; ++k) dw[k] = partials[k];
  if (db != nullptr) {
    for (int f = 0; f < filters; ++f) db[f] = partials[total + static_cast<size_t>(f)];
  }
  for (int b = 1; b < blocks; ++b) {
    const float* part = partials + static_cast<size_t>(b) * partial_size;
    for (size_t k = 0; k < total; ++k) dw[k] += part[k];
    if (db != nullptr) {
      for (int f = 0; f < filters; ++f) db[f] += part[total + static_cast<size_t>(f)];
    }
  }
}

void ConvInputGradStride1(const Window& g, int filters, const float* dpre, const float* w, int batch, float* dx,
                          float* scratch) {
  // wt[i, j, f, c] = w[kh - 1 - i, kw - 1 - j, c, f]
  float* wt = scratch;
  for (int i = 0; i < g.kh; ++i) {
    for (int j = 0; j < g.kw; ++j) {
      const float* src = w + static_cast<size_t>((g.kh - 1 - i) * g.kw + (g.kw - 1 - j)) * g.c * filters;
      float* dst = wt + static_cast<size_t>(i * g.kw + j) * filters * g.c;
      for (int c = 0; c < g.c; ++c) {
        for (int f = 0; f < filters; ++f) dst[static_cast<size_t>(f) * g.c + c] = src[static_cast<size_t>(c) * filters + f];
      }
    }
  }
  avx512::ConvForward(TransposedStride1(g, filters), g.c, dpre, batch, wt, nullptr, false, dx,
              scratch + static_cast<size_t>(g.kh) * g.kw * g.c * filters);
}


namespace {

// Taps k' < k with k' = a (mod s): the sub-kernel extent of parity class a.
int ClassTaps(int k, int s, int a) { return a < k ? (k - a + s - 1) / s : 0; }
// Taps of the classes before a.
int TapsBefore(int k, int s, int a) {
  int n = 0;
  for (int b = 0; b < a; ++b) n += ClassTaps(k, s, b);
  return n;
}

}  // namespace

void ConvInputGradStrided(const Window& g, int filters, const float* dpre, const float* w, int batch, float* dx,
                          float* scratch) {
  const int sh = g.stride_h, sw = g.stride_w, C = g.c, F = filters;
  const size_t fc = static_cast<size_t>(F) * C;
  // Sub-kernel of class (a, b): [r, s, f, c] = w[a + sh (kh_a - 1 - r), b + sw (kw_b - 1 - s), c, f],
  // classes in row-major order.
  float* wsub = scratch;
  auto sub_offset = [&](int a, int b) {
    return (static_cast<size_t>(TapsBefore(g.kh, sh, a)) * g.kw +
            static_cast<size_t>(ClassTaps(g.kh, sh, a)) * TapsBefore(g.kw, sw, b)) * fc;
  };
  for (int a = 0; a < std::min(sh, g.kh); ++a) {
    const int kha = ClassTaps(g.kh, sh, a);
    for (int b = 0; b < std::min(sw, g.kw); ++b) {
      const int kwb = ClassTaps(g.kw, sw, b);
      float* dst = wsub + sub_offset(a, b);
      for (int r = 0; r < kha; ++r) {
        for (int q = 0; q < kwb; ++q, dst += fc) {
          const int i = a + sh * (kha - 1 - r), j = b + sw * (kwb - 1 - q);
          const float* src = w + static_cast<size_t>(i * g.kw + j) * fc;
          for (int c = 0; c < C; ++c) {
            for (int f = 0; f < F; ++f) dst[static_cast<size_t>(f) * C + c] = src[static_cast<size_t>(c) * F + f];
          }
        }
      }
    }
  }
  // dpre, zero-padded.
  const StridedPadding pad = StridedInputGradPadding(g);
  float* dp = scratch + static_cast<size_t>(g.kh) * g.kw * fc;
  const size_t prow = static_cast<size_t>(pad.w) * F, left = static_cast<size_t>(pad.left) * F;
  const size_t inside = static_cast<size_t>(g.out_w) * F;
  for (int n = 0; n < batch; ++n) {
    for (int r = 0; r < pad.h; ++r) {
      float* dst = dp + (static_cast<size_t>(n) * pad.h + r) * prow;
      const int oh = r - pad.top;
      if (oh < 0 || oh >= g.out_h) {
        std::fill(dst, dst + prow, 0.0f);
        continue;
      }
      std::fill(dst, dst + left, 0.0f);
      std::copy_n(dpre + (static_cast<size_t>(n) * g.out_h + oh) * inside, inside, dst + left);
      std::fill(dst + left + inside, dst + prow, 0.0f);
    }
  }
  ParallelFor(static_cast<int64_t>(batch) * g.h, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      const int n = static_cast<int>(row / g.h), ih = static_cast<int>(row % g.h);
      float* dxrow = dx + row * g.w * C;
      const int a = (ih + g.pad_top) % sh, kha = ClassTaps(g.kh, sh, a);
      if (kha == 0) {
        std::fill(dxrow, dxrow + static_cast<size_t>(g.w) * C, 0.0f);
        continue;
      }
      const int m = (ih + g.pad_top - a) / sh;  // the last dpre row this input row reads
      for (int b = 0; b < sw; ++b) {
        const int first = ((b - g.pad_left) % sw + sw) % sw;  // the first column of class b
        if (first >= g.w) continue;
        const int cells = (g.w - first + sw - 1) / sw, kwb = ClassTaps(g.kw, sw, b);
        if (kwb == 0) {
          for (int k = 0; k < cells; ++k) std::fill_n(dxrow + static_cast<size_t>(first + k * sw) * C, C, 0.0f);
          continue;
        }
        const int mw = (first + g.pad_left - b) / sw;
        const float* xrow = dp + ((static_cast<size_t>(n) * pad.h + m - kha + 1 + pad.top) * pad.w +
                                  (mw - kwb + 1 + pad.left)) * F;
        const Geometry geo{kha, kwb, F, C, pad.w * F, F, sw * C};
        const float* ws = wsub + sub_offset(a, b);
        for (int c0 = 0; c0 < C; c0 += kFilterGroup) {
          const FilterGroup cg = GroupAt(C, c0);
          const int kind = cg.nv == 2 ? 2 : kwb == 3 ? 3 : kwb == 2 ? 4 : 1;
          ForEachPixelTile(cells, cg.nv == 1 ? kMaxPixels1 : kMaxPixels2, [&](int p0, int p) {
            PickForward(kind, p, F)(geo, xrow + static_cast<size_t>(p0) * F, ws + c0, nullptr, false,
                                    dxrow + static_cast<size_t>(first + sw * p0) * C + c0, cg.last);
          });
        }
      }
    }
  });
}
}  // namespace ringtrain::kernels::avx512
