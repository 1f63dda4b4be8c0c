// The register tiles of the direct AVX-512 filter gradient (ConvFilterGradImpl): a tile
// of kernel taps x filter vectors accumulates in registers while the output positions
// of a block of examples slide past, the relu mask and the bias gradient fused into the
// first pass over the gradient. Pure functions of their arguments, no state: callable
// from any thread. Include only from files compiled with -mavx512f (avx512_conv.cc).
#pragma once

#include <immintrin.h>

#include <cstddef>

#include "kernels/avx512_conv_tiles.h"

namespace ringtrain::kernels::avx512::tiles {

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
  // Locals, not the structs' fields: the compiler reloaded those every step.
  const int out_w = pos.out_w, steps = pos.out_w + 3 - S;
  const size_t pixel_step = pos.pixel_step, fs = f;
  const float* __restrict dy = io.dy;
  const float* __restrict yv = io.y;
  const float* __restrict dread = io.dread;
  float* dstore = io.dstore;
  for (int e = 0; e < pos.examples; ++e) {
  for (int oh = 0; oh < pos.out_h; ++oh) {
    const float* xrow = x + e * pos.x_step + static_cast<size_t>(oh) * pos.row_step;
    const size_t orow = e * pos.o_step + static_cast<size_t>(oh) * out_w * fs;
    __m512 p10 = z, p11 = z, p20 = z, p21 = z;  // the gradients at q - 1 and q - 2
    for (int q = 0; q < steps; ++q) {
      __m512 d0 = z, d1 = z;
      if (q < out_w) {
        const size_t o = orow + static_cast<size_t>(q) * fs;
        if (!first) {
          d0 = _mm512_maskz_loadu_ps(m0, dread + o);
          if (NV > 1) d1 = _mm512_maskz_loadu_ps(m1, dread + o + 16);
        } else {
          d0 = _mm512_maskz_loadu_ps(m0, dy + o);
          if (NV > 1) d1 = _mm512_maskz_loadu_ps(m1, dy + o + 16);
          if (relu) {
            d0 = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(_mm512_maskz_loadu_ps(m0, yv + o), z, _CMP_GT_OQ), d0);
            if (NV > 1) {
              d1 = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(_mm512_maskz_loadu_ps(m1, yv + o + 16), z, _CMP_GT_OQ), d1);
            }
          }
          if (dstore != nullptr) {
            _mm512_mask_storeu_ps(dstore + o, m0, d0);
            if (NV > 1) _mm512_mask_storeu_ps(dstore + o + 16, m1, d1);
          }
          db0 = _mm512_add_ps(db0, d0);
          if (NV > 1) db1 = _mm512_add_ps(db1, d1);
        }
      }
      const float* xq = xrow + static_cast<size_t>(q) * pixel_step;
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

}  // namespace ringtrain::kernels::avx512::tiles
