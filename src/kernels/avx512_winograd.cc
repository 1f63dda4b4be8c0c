// AVX-512 Winograd passes (see winograd.h): the drivers and products for both tile sizes,
// and F(2x2, 3x3)'s transforms (F(4x4, 3x3)'s are in avx512_winograd4.cc). Vectors run over
// channels (the input transform) and filters (the kernel and output transforms): NHWC keeps
// both contiguous. The planes' products per block go through register-tile kernels.
//
//   B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1]
//   G   = [1 0 0; 1/2 1/2 1/2; 1/2 -1/2 1/2; 0 0 1]
//   A^T = [1 1 1 0; 0 1 -1 -1]
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <utility>

#include "kernels/avx512_microkernel.h"
#include "kernels/avx512_util.h"
#include "kernels/avx512_winograd4.h"
#include "kernels/impl.h"
#include "kernels/thread_pool.h"
#include "kernels/winograd.h"

namespace ringtrain::kernels::avx512 {
namespace {

constexpr int kMr = 6;   // MicroKernel rows
constexpr int kNc = 64;  // MicroKernel columns (4 vectors)

// Where tile t of example n reads and writes.
struct TileAt {
  int oh, ow;  // the tile's first output pixel
};

inline TileAt TilePos(const WinogradPlan& p, int t) { return {2 * (t / p.tiles_w), 2 * (t % p.tiles_w)}; }

// One input column of a tile combined over its 4 rows (B^T d, column s): d0 - d2, d1 + d2,
// d2 - d1, d1 - d3 from the rows (zero outside the input).
struct Column {
  __m512 v0, v1, v2, v3;
};

inline Column ColumnTransform(const float* const rows[4], bool in, size_t at, __mmask16 m) {
  const __m512 z = _mm512_setzero_ps();
  auto load = [&](int r) { return in && rows[r] != nullptr ? _mm512_maskz_loadu_ps(m, rows[r] + at) : z; };
  const __m512 d0 = load(0), d1 = load(1), d2 = load(2), d3 = load(3);
  return {_mm512_sub_ps(d0, d2), _mm512_add_ps(d1, d2), _mm512_sub_ps(d2, d1), _mm512_sub_ps(d1, d3)};
}

// V[xi][t][c] = (B^T d B)[xi] for the tiles [t0, t0 + nt) of example xn. Neighbouring
// tiles of a row share two input columns: each column is combined over the rows once.
void TransformInput(const Window& g, const WinogradPlan& p, const float* xn, int t0, int nt, float* v) {
  const int c = g.c;
  const size_t plane = p.v_plane;
  for (int t = 0; t < nt;) {
    // A run of tiles of one tile row.
    const int th = (t0 + t) / p.tiles_w, tw0 = (t0 + t) % p.tiles_w;
    const int run = std::min(nt - t, p.tiles_w - tw0);
    const int ih0 = 2 * th - g.pad_top, iw0 = 2 * tw0 - g.pad_left;
    const float* rows[4];
    for (int r = 0; r < 4; ++r) {
      const int ih = ih0 + r;
      rows[r] = ih >= 0 && ih < g.h ? xn + static_cast<size_t>(ih) * g.w * c : nullptr;
    }
    auto column = [&](int iw, int c0, __mmask16 m) {
      return ColumnTransform(rows, iw >= 0 && iw < g.w, static_cast<size_t>(iw) * c + c0, m);
    };
    for (int c0 = 0; c0 < c; c0 += 16) {
      const __mmask16 m = TailMask(c - c0);
      Column a = column(iw0, c0, m), b = column(iw0 + 1, c0, m);
      float* dst = v + static_cast<size_t>(t) * c + c0;
      for (int k = 0; k < run; ++k, dst += c) {
        const Column cc = column(iw0 + 2 * k + 2, c0, m), d = column(iw0 + 2 * k + 3, c0, m);
#define RT_ROW(r)                                                                   \
  _mm512_mask_storeu_ps(dst + (4 * r) * plane, m, _mm512_sub_ps(a.v##r, cc.v##r));     \
  _mm512_mask_storeu_ps(dst + (4 * r + 1) * plane, m, _mm512_add_ps(b.v##r, cc.v##r)); \
  _mm512_mask_storeu_ps(dst + (4 * r + 2) * plane, m, _mm512_sub_ps(cc.v##r, b.v##r)); \
  _mm512_mask_storeu_ps(dst + (4 * r + 3) * plane, m, _mm512_sub_ps(b.v##r, d.v##r));
        RT_ROW(0) RT_ROW(1) RT_ROW(2) RT_ROW(3)
#undef RT_ROW
        a = cc;
        b = d;
      }
    }
    t += run;
  }
}

// U[xi][c][f] = G w[., ., c, f] G^T; w is [3, 3, c, f].
void TransformKernel(const float* w, int c, int f, float* u) {
  const size_t cf = static_cast<size_t>(c) * f;
  const __m512 half = _mm512_set1_ps(0.5f);
  for (int ci = 0; ci < c; ++ci) {
    for (int f0 = 0; f0 < f; f0 += 16) {
      const __mmask16 m = TailMask(f - f0);
      __m512 k[9];
      for (int tap = 0; tap < 9; ++tap) k[tap] = _mm512_maskz_loadu_ps(m, w + tap * cf + static_cast<size_t>(ci) * f + f0);
      __m512 q[12];  // G k: 4 rows x 3 columns
      for (int j = 0; j < 3; ++j) {
        const __m512 g0 = k[j], g1 = k[3 + j], g2 = k[6 + j];
        const __m512 s = _mm512_mul_ps(_mm512_add_ps(g0, g2), half), h1 = _mm512_mul_ps(g1, half);
        q[j] = g0;
        q[3 + j] = _mm512_add_ps(s, h1);
        q[6 + j] = _mm512_sub_ps(s, h1);
        q[9 + j] = g2;
      }
      for (int r = 0; r < 4; ++r) {  // (G k) G^T
        const __m512 g0 = q[3 * r], g1 = q[3 * r + 1], g2 = q[3 * r + 2];
        const __m512 s = _mm512_mul_ps(_mm512_add_ps(g0, g2), half), h1 = _mm512_mul_ps(g1, half);
        const __m512 out[4] = {g0, _mm512_add_ps(s, h1), _mm512_sub_ps(s, h1), g2};
        for (int s2 = 0; s2 < 4; ++s2) {
          _mm512_mask_storeu_ps(u + (4 * r + s2) * cf + static_cast<size_t>(ci) * f + f0, m, out[s2]);
        }
      }
    }
  }
}

// MicroKernel's product for narrow right-hand sides (n <= 32: few filters, or few channels
// in the filter gradient): up to 14 rows of one vector or 12 rows of two, so that each
// loaded vector of b feeds many fused multiply-adds. Named accumulators (see MicroKernel).
#define RT_TK_VARS(r) __m512 c##r##0 = z, c##r##1 = z;
#define RT_TK_LOAD(r)                                                                             \
  if constexpr (MR > r) {                                                                         \
    c##r##0 = NV == 1 ? _mm512_maskz_loadu_ps(last, c + r * ldc) : _mm512_loadu_ps(c + r * ldc); \
    if constexpr (NV > 1) c##r##1 = _mm512_maskz_loadu_ps(last, c + r * ldc + 16);                \
  }
#define RT_TK_STORE(r)                                                                \
  if constexpr (MR > r) {                                                             \
    if constexpr (NV == 1) {                                                          \
      _mm512_mask_storeu_ps(c + r * ldc, last, c##r##0);                              \
    } else {                                                                          \
      _mm512_storeu_ps(c + r * ldc, c##r##0);                                         \
      _mm512_mask_storeu_ps(c + r * ldc + 16, last, c##r##1);                         \
    }                                                                                 \
  }
#define RT_TK_FMA(r)                                                          \
  if constexpr (MR > r) {                                                     \
    const __m512 s = _mm512_set1_ps(a[r * ars]);                              \
    c##r##0 = _mm512_fmadd_ps(s, b0, c##r##0);                                \
    if constexpr (NV > 1) c##r##1 = _mm512_fmadd_ps(s, b1, c##r##1);          \
  }
#define RT_TK_EACH(M) M(0) M(1) M(2) M(3) M(4) M(5) M(6) M(7) M(8) M(9) M(10) M(11) M(12) M(13)

template <int MR, int NV>
void TallKernel(const float* a, ptrdiff_t ars, ptrdiff_t aks, const float* b, ptrdiff_t ldb, int kc, float* c,
                ptrdiff_t ldc, __mmask16 last, bool accumulate) {
  static_assert(MR >= 1 && MR <= 14 && NV >= 1 && NV <= 2 && MR * NV <= 28, "tile too large for the registers");
  const __m512 z = _mm512_setzero_ps();
  RT_TK_EACH(RT_TK_VARS)
  if (accumulate) {
    RT_TK_EACH(RT_TK_LOAD)
  }
  for (int k = 0; k < kc; ++k, b += ldb, a += aks) {
    const __m512 b0 = NV == 1 ? _mm512_maskz_loadu_ps(last, b) : _mm512_loadu_ps(b);
    const __m512 b1 = NV == 2 ? _mm512_maskz_loadu_ps(last, b + 16) : z;
    RT_TK_EACH(RT_TK_FMA)
  }
  RT_TK_EACH(RT_TK_STORE)
}

#undef RT_TK_VARS
#undef RT_TK_LOAD
#undef RT_TK_STORE
#undef RT_TK_FMA
#undef RT_TK_EACH

constexpr int kTallRows1 = 14, kTallRows2 = 12;

template <int NV, size_t... I>
constexpr std::array<MicroKernelFn, sizeof...(I)> TallTable(std::index_sequence<I...>) {
  return {&TallKernel<static_cast<int>(I) + 1, NV>...};
}

MicroKernelFn PickTall(int mr, int nv) {
  static constexpr auto one = TallTable<1>(std::make_index_sequence<kTallRows1>());
  static constexpr auto two = TallTable<2>(std::make_index_sequence<kTallRows2>());
  return nv == 1 ? one[mr - 1] : two[mr - 1];
}

// out[xi] (rows x n) (+)= a[xi] (rows x k; A(r, k) = a[r * ars + k * aks]) * b[xi] (k x n),
// for the `planes` planes, in register tiles (rows split evenly into tiles of at most 14, 12
// or 6 rows).
void PlaneProducts(int planes, const float* a, size_t a_plane, ptrdiff_t ars, ptrdiff_t aks, int rows, int k,
                   const float* b, size_t b_plane, int n, float* out, size_t out_plane, bool accumulate) {
  const int nc = n <= 32 ? 32 : kNc;
  for (int xi = 0; xi < planes; ++xi) {
    const float* ax = a + xi * a_plane;
    const float* bx = b + xi * b_plane;
    float* ox = out + xi * out_plane;
    for (int n0 = 0; n0 < n; n0 += nc) {
      const int cols = std::min(nc, n - n0);
      const int nv = (cols + 15) / 16;
      const __mmask16 last = TailMask(cols - 16 * (nv - 1));
      const int max_rows = nv == 1 ? kTallRows1 : nv == 2 ? kTallRows2 : kMr;
      const int tiles = (rows + max_rows - 1) / max_rows;
      const int per = (rows + tiles - 1) / tiles;
      for (int r0 = 0; r0 < rows; r0 += per) {
        const int mr = std::min(per, rows - r0);
        const MicroKernelFn fn = nv <= 2 ? PickTall(mr, nv) : PickMicroKernel(mr, nv);
        fn(ax + r0 * ars, ars, aks, bx + n0, n, k, ox + static_cast<size_t>(r0) * n + n0, n, last, accumulate);
      }
    }
  }
}

// y for the tiles [t0, t0 + nt) of example n from M[xi][t][f]: A^T M A + bias, relu.
void TransformOutput(const Window& g, const WinogradPlan& p, int filters, const float* mm, int t0, int nt,
                     const float* bias, bool relu, float* yn) {
  const size_t plane = p.m_plane;
  const __m512 z = _mm512_setzero_ps();
  for (int t = 0; t < nt; ++t) {
    const TileAt at = TilePos(p, t0 + t);
    const bool two_rows = at.oh + 1 < g.out_h, two_cols = at.ow + 1 < g.out_w;
    for (int f0 = 0; f0 < filters; f0 += 16) {
      const __mmask16 m = TailMask(filters - f0);
      const float* src = mm + static_cast<size_t>(t) * filters + f0;
      __m512 q[8];  // A^T M: 2 rows x 4 columns
      for (int s = 0; s < 4; ++s) {
        const __m512 m0 = _mm512_maskz_loadu_ps(m, src + s * plane), m1 = _mm512_maskz_loadu_ps(m, src + (4 + s) * plane);
        const __m512 m2 = _mm512_maskz_loadu_ps(m, src + (8 + s) * plane);
        const __m512 m3 = _mm512_maskz_loadu_ps(m, src + (12 + s) * plane);
        q[s] = _mm512_add_ps(_mm512_add_ps(m0, m1), m2);
        q[4 + s] = _mm512_sub_ps(_mm512_sub_ps(m1, m2), m3);
      }
      const __m512 bv = bias == nullptr ? z : _mm512_maskz_loadu_ps(m, bias + f0);
      for (int a = 0; a < (two_rows ? 2 : 1); ++a) {
        const __m512 *r = q + 4 * a;
        __m512 o0 = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(r[0], r[1]), r[2]), bv);
        __m512 o1 = _mm512_add_ps(_mm512_sub_ps(_mm512_sub_ps(r[1], r[2]), r[3]), bv);
        if (relu) {
          o0 = _mm512_max_ps(o0, z);
          o1 = _mm512_max_ps(o1, z);
        }
        float* dst = yn + (static_cast<size_t>(at.oh + a) * g.out_w + at.ow) * filters + f0;
        _mm512_mask_storeu_ps(dst, m, o0);
        if (two_cols) _mm512_mask_storeu_ps(dst + filters, m, o1);
      }
    }
  }
}

// The units [begin, end) of slot s.
inline void SlotUnits(const WinogradPlan& p, int s, int* begin, int* end) {
  *begin = static_cast<int>(static_cast<int64_t>(p.units) * s / p.slots);
  *end = static_cast<int>(static_cast<int64_t>(p.units) * (s + 1) / p.slots);
}

// dM[xi][t][f] = A dpre A^T for the tiles [t0, t0 + nt) of one example (dpre = dy masked
// by y > 0 with relu; zero outside the output), writing dpre where asked and adding it
// to db in tile order where db is not null (a convolution without a bias has none: the
// sum is one long chain of dependent adds, a third of this pass's time).
void TransformGradient(const Window& g, const WinogradPlan& p, int filters, const float* dyn, const float* yn,
                       bool relu, float* dpren, int t0, int nt, float* dm, float* db) {
  const size_t plane = p.m_plane;
  const __m512 z = _mm512_setzero_ps();
  for (int t = 0; t < nt; ++t) {
    const TileAt at = TilePos(p, t0 + t);
    const bool two_rows = at.oh + 1 < g.out_h, two_cols = at.ow + 1 < g.out_w;
    for (int f0 = 0; f0 < filters; f0 += 16) {
      const __mmask16 m = TailMask(filters - f0);
      __m512 d[4] = {z, z, z, z};  // [a][b]
      __m512 dbv = db == nullptr ? z : _mm512_maskz_loadu_ps(m, db + f0);
      for (int a = 0; a < (two_rows ? 2 : 1); ++a) {
        for (int b = 0; b < (two_cols ? 2 : 1); ++b) {
          const size_t o = (static_cast<size_t>(at.oh + a) * g.out_w + at.ow + b) * filters + f0;
          __m512 v = _mm512_maskz_loadu_ps(m, dyn + o);
          if (relu) v = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(_mm512_maskz_loadu_ps(m, yn + o), z, _CMP_GT_OQ), v);
          if (dpren != nullptr) _mm512_mask_storeu_ps(dpren + o, m, v);
          if (db != nullptr) dbv = _mm512_add_ps(dbv, v);
          d[2 * a + b] = v;
        }
      }
      if (db != nullptr) _mm512_mask_storeu_ps(db + f0, m, dbv);
      __m512 q[8];  // A dpre: 4 rows x 2 columns
      for (int b = 0; b < 2; ++b) {
        q[b] = d[b];
        q[2 + b] = _mm512_add_ps(d[b], d[2 + b]);
        q[4 + b] = _mm512_sub_ps(d[b], d[2 + b]);
        q[6 + b] = _mm512_sub_ps(z, d[2 + b]);
      }
      float* dst = dm + static_cast<size_t>(t) * filters + f0;
      for (int r = 0; r < 4; ++r) {  // (A dpre) A^T
        const __m512 q0 = q[2 * r], q1 = q[2 * r + 1];
        _mm512_mask_storeu_ps(dst + (4 * r) * plane, m, q0);
        _mm512_mask_storeu_ps(dst + (4 * r + 1) * plane, m, _mm512_add_ps(q0, q1));
        _mm512_mask_storeu_ps(dst + (4 * r + 2) * plane, m, _mm512_sub_ps(q0, q1));
        _mm512_mask_storeu_ps(dst + (4 * r + 3) * plane, m, _mm512_sub_ps(z, q1));
      }
    }
  }
}

// dw[i, j, c, f] = (G^T dU G)[i, j] from dU[xi][c][f].
void TransformKernelGradient(const float* du, int c, int f, float* dw) {
  const size_t cf = static_cast<size_t>(c) * f;
  const __m512 half = _mm512_set1_ps(0.5f);
  for (int ci = 0; ci < c; ++ci) {
    for (int f0 = 0; f0 < f; f0 += 16) {
      const __mmask16 m = TailMask(f - f0);
      const size_t at = static_cast<size_t>(ci) * f + f0;
      __m512 q[12];  // G^T dU: 3 rows x 4 columns
      for (int s = 0; s < 4; ++s) {
        const __m512 u0 = _mm512_maskz_loadu_ps(m, du + s * cf + at), u1 = _mm512_maskz_loadu_ps(m, du + (4 + s) * cf + at);
        const __m512 u2 = _mm512_maskz_loadu_ps(m, du + (8 + s) * cf + at);
        const __m512 u3 = _mm512_maskz_loadu_ps(m, du + (12 + s) * cf + at);
        const __m512 sum = _mm512_mul_ps(_mm512_add_ps(u1, u2), half);
        q[s] = _mm512_add_ps(u0, sum);
        q[4 + s] = _mm512_mul_ps(_mm512_sub_ps(u1, u2), half);
        q[8 + s] = _mm512_add_ps(sum, u3);
      }
      for (int i = 0; i < 3; ++i) {  // (G^T dU) G
        const __m512 u0 = q[4 * i], u1 = q[4 * i + 1], u2 = q[4 * i + 2], u3 = q[4 * i + 3];
        const __m512 sum = _mm512_mul_ps(_mm512_add_ps(u1, u2), half);
        _mm512_mask_storeu_ps(dw + (3 * i) * cf + at, m, _mm512_add_ps(u0, sum));
        _mm512_mask_storeu_ps(dw + (3 * i + 1) * cf + at, m, _mm512_mul_ps(_mm512_sub_ps(u1, u2), half));
        _mm512_mask_storeu_ps(dw + (3 * i + 2) * cf + at, m, _mm512_add_ps(sum, u3));
      }
    }
  }
}

// Calls fn(n, t0, nt, offset) for the runs of one example's tiles in unit `unit`
// (tiles [t0, t0 + nt) of example n at row `offset` of the block); returns the block's tiles.
template <typename Fn>
int EachRun(const WinogradPlan& p, int batch, int unit, Fn fn) {
  const int64_t first = static_cast<int64_t>(unit) * p.block;
  const int64_t last = std::min<int64_t>(first + p.block, static_cast<int64_t>(batch) * p.tiles);
  for (int64_t at = first; at < last;) {
    const int n = static_cast<int>(at / p.tiles), t0 = static_cast<int>(at % p.tiles);
    const int nt = static_cast<int>(std::min<int64_t>(last - at, p.tiles - t0));
    fn(n, t0, nt, static_cast<int>(at - first));
    at += nt;
  }
  return static_cast<int>(last - first);
}

}  // namespace

void WinogradForward(const Window& g, int filters, const float* x, int batch, const float* w, const float* bias,
                     bool relu, float* y, float* scratch) {
  const WinogradPlan p = PlanWinograd(g, filters, batch, ConvPass::kForward, WinogradTile(g, filters, ConvPass::kForward));
  const bool four = p.m == 4;
  const int c = g.c;
  float* u = scratch;
  float* slots = u + p.u_floats;
  if (four) {
    wino4::TransformKernel(w, c, filters, u);
  } else {
    TransformKernel(w, c, filters, u);
  }
  const size_t in_example = g.in_size(), out_example = static_cast<size_t>(g.out_h) * g.out_w * filters;
  ParallelFor(p.slots, [&](int64_t begin, int64_t end) {
    // One call walks its slots in turn: they share the first one's buffers, which stay in L2.
    float* v = slots + begin * (p.v_floats + p.m_floats);
    float* mm = v + p.v_floats;
    for (int64_t s = begin; s < end; ++s) {
      int u0, u1;
      SlotUnits(p, static_cast<int>(s), &u0, &u1);
      for (int unit = u0; unit < u1; ++unit) {
        const int rows = EachRun(p, batch, unit, [&](int n, int t0, int nt, int off) {
          float* vo = v + static_cast<size_t>(off) * c;
          if (four) {
            wino4::TransformInput(g, p, x + n * in_example, t0, nt, vo);
          } else {
            TransformInput(g, p, x + n * in_example, t0, nt, vo);
          }
        });
        PlaneProducts(p.planes, v, p.v_plane, c, 1, rows, c, u, static_cast<size_t>(c) * filters, filters, mm,
                      p.m_plane, false);
        EachRun(p, batch, unit, [&](int n, int t0, int nt, int off) {
          const float* mo = mm + static_cast<size_t>(off) * filters;
          if (four) {
            wino4::TransformOutput(g, p, filters, mo, t0, nt, bias, relu, y + n * out_example);
          } else {
            TransformOutput(g, p, filters, mo, t0, nt, bias, relu, y + n * out_example);
          }
        });
      }
    }
  });
}

void WinogradFilterGrad(const Window& g, int filters, const float* x, const float* y, const float* dy, int batch,
                        bool relu, float* dw, float* db, float* dpre, float* scratch) {
  const WinogradPlan p =
      PlanWinograd(g, filters, batch, ConvPass::kFilterGrad, WinogradTile(g, filters, ConvPass::kFilterGrad));
  const bool four = p.m == 4;
  const int c = g.c;
  const size_t du_floats = p.u_floats;
  const size_t slot_floats = p.v_floats + p.m_floats + du_floats + filters;
  const size_t in_example = g.in_size(), out_example = static_cast<size_t>(g.out_h) * g.out_w * filters;
  const bool masked = relu && y != nullptr;
  ParallelFor(p.slots, [&](int64_t begin, int64_t end) {
    // One call walks its slots in turn: they share the first one's V and dM (kept in L2);
    // each slot keeps its own partial sums.
    float* v = scratch + begin * slot_floats;
    float* dm = v + p.v_floats;
    for (int64_t s = begin; s < end; ++s) {
      float* du = scratch + s * slot_floats + p.v_floats + p.m_floats;
      float* dbs = du + du_floats;
      std::fill(dbs, dbs + filters, 0.0f);  // the slot's first block writes dU, the others add to it
      float* dbn = db == nullptr ? nullptr : dbs;  // no bias: no sum
      int u0, u1;
      SlotUnits(p, static_cast<int>(s), &u0, &u1);
      if (u0 == u1) std::fill(du, du + du_floats, 0.0f);  // no blocks (batch 0)
      for (int unit = u0; unit < u1; ++unit) {
        const int rows = EachRun(p, batch, unit, [&](int n, int t0, int nt, int off) {
          float* vo = v + static_cast<size_t>(off) * c;
          float* dmo = dm + static_cast<size_t>(off) * filters;
          const float* yn = masked ? y + n * out_example : nullptr;
          float* dpren = dpre == nullptr ? nullptr : dpre + n * out_example;
          if (four) {
            wino4::TransformInput(g, p, x + n * in_example, t0, nt, vo);
            wino4::TransformGradient(g, p, filters, dy + n * out_example, yn, masked, dpren, t0, nt, dmo, dbn);
          } else {
            TransformInput(g, p, x + n * in_example, t0, nt, vo);
            TransformGradient(g, p, filters, dy + n * out_example, yn, masked, dpren, t0, nt, dmo, dbn);
          }
        });
        // dU[xi] (c x f) += V[xi]^T (c x rows) dM[xi] (rows x f)
        PlaneProducts(p.planes, v, p.v_plane, 1, c, c, rows, dm, p.m_plane, filters, du, static_cast<size_t>(c) * filters,
                      unit > u0);
      }
    }
  });
  // The slots' partial sums in slot order, into slot 0's.
  float* du = scratch + p.v_floats + p.m_floats;
  for (int s = 1; s < p.slots; ++s) {
    const float* other = scratch + s * slot_floats + p.v_floats + p.m_floats;
    for (size_t k = 0; k < du_floats + filters; ++k) du[k] += other[k];
  }
  if (four) {
    wino4::TransformKernelGradient(du, c, filters, dw);
  } else {
    TransformKernelGradient(du, c, filters, dw);
  }
  if (db != nullptr) std::memcpy(db, du + du_floats, sizeof(float) * filters);
}

}  // namespace ringtrain::kernels::avx512
