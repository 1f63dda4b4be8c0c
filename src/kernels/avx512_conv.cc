// AVX-512 convolution passes, direct (no im2col): vectors run over the filters, so a
// tile of output pixels x filter vectors accumulates in registers while the window
// slides over the (zero-padded) input.
#include <immintrin.h>

#include <algorithm>

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
};

// y[p, fvecs] = act(bias + sum over the window of x * w) for P output pixels.
template <int P, int NV>
void ForwardTile(const Geometry& g, const float* x, const float* w, const float* bias, bool relu, float* y,
                 __mmask16 last) {
  __m512 acc[P][NV];
  for (int p = 0; p < P; ++p) {
    for (int v = 0; v < NV; ++v) acc[p][v] = _mm512_setzero_ps();
  }
  const int row_len = g.kw * g.c;  // one window row: kw cells of c channels, contiguous
  for (int i = 0; i < g.kh; ++i) {
    const float* xr = x + static_cast<size_t>(i) * g.row_stride;
    const float* wr = w + static_cast<size_t>(i) * row_len * g.f;
    for (int t = 0; t < row_len; ++t) {
      __m512 b[NV];
      for (int v = 0; v < NV; ++v) b[v] = LoadCols(wr + static_cast<size_t>(t) * g.f + 16 * v, v == NV - 1, last);
      for (int p = 0; p < P; ++p) {
        const __m512 a = _mm512_set1_ps(xr[p * g.pixel_stride + t]);
        for (int v = 0; v < NV; ++v) acc[p][v] = _mm512_fmadd_ps(a, b[v], acc[p][v]);
      }
    }
  }
  const __m512 zero = _mm512_setzero_ps();
  for (int v = 0; v < NV; ++v) {
    const __m512 bv = bias != nullptr ? LoadCols(bias + 16 * v, v == NV - 1, last) : zero;
    for (int p = 0; p < P; ++p) {
      __m512 r = _mm512_add_ps(acc[p][v], bv);
      if (relu) r = _mm512_max_ps(r, zero);
      StoreCols(y + static_cast<size_t>(p) * g.f + 16 * v, r, v == NV - 1, last);
    }
  }
}

// The same for at most 32 filters (two vectors), with named accumulators: GCC 12
// keeps an array of __m512 on the stack (see avx512_microkernel.h), named ones in
// registers. The seeds' convolutions all take this path.
template <int P, int NV>
void ForwardTileNarrow(const Geometry& g, const float* x, const float* w, const float* bias, bool relu, float* y,
                       __mmask16 last) {
  static_assert(P <= 8 && NV <= 2, "tile too large");
  const __m512 z = _mm512_setzero_ps();
  __m512 a00 = z, a01 = z, a10 = z, a11 = z, a20 = z, a21 = z, a30 = z, a31 = z, a40 = z, a41 = z, a50 = z, a51 = z,
         a60 = z, a61 = z, a70 = z, a71 = z;
  const int row_len = g.kw * g.c;
  const int ps = g.pixel_stride;
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
      RT_PX(0) RT_PX(1) RT_PX(2) RT_PX(3) RT_PX(4) RT_PX(5) RT_PX(6) RT_PX(7)
#undef RT_PX
    }
  }
  const __m512 bv0 = bias == nullptr ? z : NV == 1 ? _mm512_maskz_loadu_ps(last, bias) : _mm512_loadu_ps(bias);
  const __m512 bv1 = bias == nullptr || NV < 2 ? z : _mm512_maskz_loadu_ps(last, bias + 16);
#define RT_OUT(p)                                                                      \
  if constexpr (P > p) {                                                               \
    __m512 r0 = _mm512_add_ps(a##p##0, bv0);                                           \
    if (relu) r0 = _mm512_max_ps(r0, z);                                               \
    float* yp = y + static_cast<size_t>(p) * g.f;                                      \
    if constexpr (NV == 1) {                                                           \
      _mm512_mask_storeu_ps(yp, last, r0);                                             \
    } else {                                                                           \
      __m512 r1 = _mm512_add_ps(a##p##1, bv1);                                         \
      if (relu) r1 = _mm512_max_ps(r1, z);                                             \
      _mm512_storeu_ps(yp, r0);                                                        \
      _mm512_mask_storeu_ps(yp + 16, last, r1);                                        \
    }                                                                                  \
  }
  RT_OUT(0) RT_OUT(1) RT_OUT(2) RT_OUT(3) RT_OUT(4) RT_OUT(5) RT_OUT(6) RT_OUT(7)
#undef RT_OUT
}

using ForwardFn = void (*)(const Geometry&, const float*, const float*, const float*, bool, float*, __mmask16);

template <int NV>
ForwardFn PickForward(int p) {
  if constexpr (NV <= 2) {
    switch (p) {
      case 1: return &ForwardTileNarrow<1, NV>;
      case 2: return &ForwardTileNarrow<2, NV>;
      case 3: return &ForwardTileNarrow<3, NV>;
      case 4: return &ForwardTileNarrow<4, NV>;
      case 5: return &ForwardTileNarrow<5, NV>;
      case 6: return &ForwardTileNarrow<6, NV>;
      case 7: return &ForwardTileNarrow<7, NV>;
      default: return &ForwardTileNarrow<8, NV>;
    }
  }
  switch (p) {
    case 1: return &ForwardTile<1, NV>;
    case 2: return &ForwardTile<2, NV>;
    case 3: return &ForwardTile<3, NV>;
    case 4: return &ForwardTile<4, NV>;
    case 5: return &ForwardTile<5, NV>;
    default: return &ForwardTile<6, NV>;
  }
}

ForwardFn PickForward(int p, int nv) {
  switch (nv) {
    case 1: return PickForward<1>(p);
    case 2: return PickForward<2>(p);
    case 3: return PickForward<3>(p);
    default: return PickForward<4>(p);
  }
}

int PixelsPerTile(int nv) { return nv <= 2 ? 8 : 6; }

// Filter gradients for TG taps at once over a run of output positions. tap_off[t] is
// the tap's offset inside a window, tap_w[t] its row in the [taps, f] kernel matrix.
// Output positions run row by row: row oh's windows start at x + oh * row_step, and
// neighbours are pixel_step apart.
struct Positions {
  int out_h, out_w, row_step, pixel_step;
};

template <int TG, int NV>
void FilterGradTaps(const int* tap_off, const float* x, const Positions& pos, const float* dpre, int f,
                    float* partial, const int* tap_row, int taps_here, __mmask16 last) {
  __m512 acc[TG][NV];
  for (int t = 0; t < TG; ++t) {
    for (int v = 0; v < NV; ++v) acc[t][v] = _mm512_setzero_ps();
  }
  for (int oh = 0; oh < pos.out_h; ++oh) {
    const float* xrow = x + static_cast<size_t>(oh) * pos.row_step;
    for (int ow = 0; ow < pos.out_w; ++ow, dpre += f) {
      __m512 d[NV];
      for (int v = 0; v < NV; ++v) d[v] = LoadCols(dpre + 16 * v, v == NV - 1, last);
      const float* xq = xrow + ow * pos.pixel_step;
      for (int t = 0; t < TG; ++t) {
        const __m512 a = _mm512_set1_ps(xq[tap_off[t]]);
        for (int v = 0; v < NV; ++v) acc[t][v] = _mm512_fmadd_ps(a, d[v], acc[t][v]);
      }
    }
  }
  for (int t = 0; t < taps_here; ++t) {
    for (int v = 0; v < NV; ++v) {
      StoreCols(partial + static_cast<size_t>(tap_row[t]) * f + 16 * v, acc[t][v], v == NV - 1, last);
    }
  }
}

using FilterGradFn = void (*)(const int*, const float*, const Positions&, const float*, int, float*, const int*, int,
                              __mmask16);

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

FilterGradFn PickFilterGrad(int tg, int nv) {
  switch (nv) {
    case 1: return PickFilterGrad<1>(tg);
    case 2: return PickFilterGrad<2>(tg);
    case 3: return PickFilterGrad<3>(tg);
    default: return PickFilterGrad<4>(tg);
  }
}

// Filter gradients for at most 32 filters with named accumulators (see
// ForwardTileNarrow), the relu mask and the bias gradient fused in: the first tap
// group reads dy (and y) and derives the masked gradient itself, storing it only when
// `dstore` is set; later groups read it back from `dread`.
struct NarrowGradIo {
  const float* dy;      // first group: the output gradient
  const float* y;       // first group with relu: the layer's output
  float* dstore;        // first group: where to keep the masked gradient, or null
  const float* dread;   // later groups: the masked gradient
  float* db;            // first group: this example's bias gradient
};

template <int TG, int NV>
void FilterGradNarrow(const int* tap_off, const float* x, const Positions& pos, const NarrowGradIo& io, bool first,
                      bool relu, int f, float* partial, const int* tap_row, int taps_here, __mmask16 last) {
  static_assert(TG <= 12 && NV <= 2, "tile too large");
  const __m512 z = _mm512_setzero_ps();
  __m512 c00 = z, c01 = z, c10 = z, c11 = z, c20 = z, c21 = z, c30 = z, c31 = z, c40 = z, c41 = z, c50 = z, c51 = z,
         c60 = z, c61 = z, c70 = z, c71 = z, c80 = z, c81 = z, c90 = z, c91 = z, c100 = z, c101 = z, c110 = z,
         c111 = z, db0 = z, db1 = z;
  const __mmask16 m0 = NV == 1 ? last : static_cast<__mmask16>(0xFFFF);
  const __mmask16 m1 = NV == 2 ? last : static_cast<__mmask16>(0);
  size_t o = 0;  // this position's offset in the gradient arrays
  for (int oh = 0; oh < pos.out_h; ++oh) {
    const float* xrow = x + static_cast<size_t>(oh) * pos.row_step;
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

using FilterGradNarrowFn = void (*)(const int*, const float*, const Positions&, const NarrowGradIo&, bool, bool, int,
                                    float*, const int*, int, __mmask16);

template <int NV>
FilterGradNarrowFn PickFilterGradNarrow(int tg) {
  switch (tg) {
    case 1: return &FilterGradNarrow<1, NV>;
    case 2: return &FilterGradNarrow<2, NV>;
    case 3: return &FilterGradNarrow<3, NV>;
    case 4: return &FilterGradNarrow<4, NV>;
    case 5: return &FilterGradNarrow<5, NV>;
    case 6: return &FilterGradNarrow<6, NV>;
    case 7: return &FilterGradNarrow<7, NV>;
    case 8: return &FilterGradNarrow<8, NV>;
    case 9: return &FilterGradNarrow<9, NV>;
    case 10: return &FilterGradNarrow<10, NV>;
    case 11: return &FilterGradNarrow<11, NV>;
    default: return &FilterGradNarrow<12, NV>;
  }
}

// Taps per pass: as many as the registers hold next to the gradient vectors.
int TapsPerPass(int nv) { return std::min(12, 24 / nv); }

}  // namespace

void ConvForward(const Window& g, int filters, const float* x, int batch, const float* w, const float* bias,
                 bool relu, float* y, float* scratch) {
  int ph, pw;
  const float* xp = PadInput(g, x, batch, scratch, &ph, &pw);
  const Geometry geo{g.kh, g.kw, g.c, filters, pw * g.c, g.stride_w * g.c};
  const int P = PixelsPerTile(std::min(4, (filters + 15) / 16));
  ParallelFor(static_cast<int64_t>(batch) * g.out_h, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      const int n = static_cast<int>(row / g.out_h), oh = static_cast<int>(row % g.out_h);
      const float* xrow = xp + (static_cast<size_t>(n) * ph + static_cast<size_t>(oh) * g.stride_h) * pw * g.c;
      float* yrow = y + (static_cast<size_t>(n) * g.out_h + oh) * g.out_w * filters;
      for (int f0 = 0; f0 < filters; f0 += 64) {
        const int cols = std::min(64, filters - f0);
        const int nv = (cols + 15) / 16;
        const __mmask16 last = TailMask(cols - 16 * (nv - 1));
        for (int ow0 = 0; ow0 < g.out_w; ow0 += P) {
          const int p = std::min(P, g.out_w - ow0);
          PickForward(p, nv)(geo, xrow + static_cast<size_t>(ow0) * geo.pixel_stride, w + f0,
                             bias != nullptr ? bias + f0 : nullptr, relu,
                             yrow + static_cast<size_t>(ow0) * filters + f0, last);
        }
      }
    }
  });
}

void ConvFilterGrad(const Window& g, int filters, const float* x, const float* y, const float* dy, int batch,
                    bool relu, float* dw, float* db, float* dpre, float* scratch) {
  const int taps = g.kh * g.kw * g.c;
  const int positions = g.out_h * g.out_w;
  const size_t per_example = static_cast<size_t>(positions) * filters;
  // scratch: [padded input][masked gradient if the caller wants none][per-example partials]
  int ph, pw;
  const float* xp = PadInput(g, x, batch, scratch, &ph, &pw);
  float* rest = scratch + PaddedInputSize(g, batch);
  float* d = dpre;
  if (d == nullptr) {
    d = rest;
    rest += per_example * batch;
  }
  const size_t partial_size = static_cast<size_t>(taps + 1) * filters;  // dw then db
  float* partials = rest;
  const Positions pos{g.out_h, g.out_w, g.stride_h * pw * g.c, g.stride_w * g.c};
  // Tap t = (i, j, c) sits at this offset inside a window.
  auto tap_offset = [&](int t) { return ((t / (g.kw * g.c)) * pw + (t / g.c) % g.kw) * g.c + t % g.c; };
  // One partial sum per example, reduced below in example order: the bits do not
  // depend on how the examples are split over threads.
  ParallelFor(batch, [&](int64_t begin, int64_t end) {
    const __m512 zero = _mm512_setzero_ps();
    for (int64_t n = begin; n < end; ++n) {
      const size_t base = static_cast<size_t>(n) * per_example;
      float* part = partials + static_cast<size_t>(n) * partial_size;
      float* pdb = part + static_cast<size_t>(taps) * filters;
      const float* xn = xp + static_cast<size_t>(n) * ph * pw * g.c;
      if (filters <= 32) {  // one pass of fused kernels, nothing written back unless asked
        const int nv = (filters + 15) / 16;
        const __mmask16 last = TailMask(filters - 16 * (nv - 1));
        const int tg = std::min(12, taps);
        NarrowGradIo io{dy + base, y == nullptr ? nullptr : y + base,
                        dpre != nullptr || taps > tg ? d + base : nullptr, d + base, pdb};
        for (int t0 = 0; t0 < taps; t0 += tg) {
          const int here = std::min(tg, taps - t0);
          int off[12], row[12];
          for (int t = 0; t < tg; ++t) {
            const int src = t0 + std::min(t, here - 1);
            off[t] = tap_offset(src);
            row[t] = src;
          }
          auto fn = nv == 1 ? PickFilterGradNarrow<1>(tg) : PickFilterGradNarrow<2>(tg);
          fn(off, xn, pos, io, t0 == 0, relu, filters, part, row, here, last);
        }
        continue;
      }
      for (int f = 0; f < filters; ++f) pdb[f] = 0.0f;
      for (int q = 0; q < positions; ++q) {
        const size_t o = base + static_cast<size_t>(q) * filters;
        for (int f0 = 0; f0 < filters; f0 += 16) {
          const __mmask16 m = TailMask(filters - f0);
          __m512 v = _mm512_maskz_loadu_ps(m, dy + o + f0);
          if (relu) v = _mm512_maskz_mov_ps(_mm512_mask_cmp_ps_mask(m, _mm512_maskz_loadu_ps(m, y + o + f0), zero, _CMP_GT_OQ), v);
          _mm512_mask_storeu_ps(d + o + f0, m, v);
          _mm512_mask_storeu_ps(pdb + f0, m, _mm512_add_ps(_mm512_maskz_loadu_ps(m, pdb + f0), v));
        }
      }
      for (int f0 = 0; f0 < filters; f0 += 64) {
        const int cols = std::min(64, filters - f0);
        const int nv = (cols + 15) / 16;
        const __mmask16 last = TailMask(cols - 16 * (nv - 1));
        const int tg = std::min(TapsPerPass(nv), taps);
        for (int t0 = 0; t0 < taps; t0 += tg) {
          const int here = std::min(tg, taps - t0);
          int off[12], row[12];
          for (int t = 0; t < tg; ++t) {
            const int src = t0 + std::min(t, here - 1);  // padding taps repeat the last; not stored
            off[t] = tap_offset(src);
            row[t] = src;
          }
          PickFilterGrad(tg, nv)(off, xn, pos, d + base + f0, filters, part + f0, row, here, last);
        }
      }
    }
  });
  const size_t total = static_cast<size_t>(taps) * filters;
  for (size_t k = 0; k < total; ++k) dw[k] = partials[k];
  if (db != nullptr) {
    for (int f = 0; f < filters; ++f) db[f] = partials[total + static_cast<size_t>(f)];
  }
  for (int n = 1; n < batch; ++n) {
    const float* part = partials + static_cast<size_t>(n) * partial_size;
    for (size_t k = 0; k < total; ++k) dw[k] += part[k];
    if (db != nullptr) {
      for (int f = 0; f < filters; ++f) db[f] += part[total + static_cast<size_t>(f)];
    }
  }
}

}  // namespace ringtrain::kernels::avx512
