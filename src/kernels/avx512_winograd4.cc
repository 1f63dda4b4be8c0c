// AVX-512 transforms of Winograd F(4x4, 3x3), points 0, +-1, +-2, inf (Lavin & Gray 2016).
// Vectors run over channels (input) and filters (kernel, output, gradient); each 2-D
// transform is two 1-D passes (columns, then rows) in registers.
//
//   B^T = [4  0 -5  0 1 0]   G = [ 1/4     0    0 ]   A^T = [1 1  1 1  1 0]
//         [0 -4 -4  1 1 0]       [-1/6 -1/6 -1/6 ]         [0 1 -1 2 -2 0]
//         [0  4 -4 -1 1 0]       [-1/6  1/6 -1/6 ]         [0 1  1 4  4 0]
//         [0 -2 -1  2 1 0]       [1/24 1/12  1/6 ]         [0 1 -1 8 -8 1]
//         [0  2 -1 -2 1 0]       [1/24 -1/12 1/6 ]
//         [0  4  0 -5 0 1]       [  0     0    1 ]
#include "kernels/avx512_winograd4.h"

#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "kernels/avx512_util.h"

namespace ringtrain::kernels::avx512::wino4 {
namespace {

struct Six {
  __m512 v[6];
};

inline __m512 Set(float s) { return _mm512_set1_ps(s); }

// Fetches element `at` of row `row` of an example whose rows start at `base` (row_floats
// each). Rows past the example's last are the next example's first ones (the batch is one
// array), which the next tiles read: the fetches run on across examples instead of stopping
// at each example's end (on 8x8 images they would otherwise never run). The address is
// formed as an integer: it may lie past the batch (a prefetch never faults).
inline void FetchRow(const float* base, int row, size_t row_floats, size_t at) {
  FetchAddress(reinterpret_cast<uintptr_t>(base) + (static_cast<size_t>(row) * row_floats + at) * sizeof(float));
}

// B^T e for one 6-vector.
inline Six InputRow(const __m512 e[6]) {
  const __m512 four = Set(4.0f), five = Set(5.0f), two = Set(2.0f);
  Six o;
  o.v[0] = _mm512_fmadd_ps(four, e[0], _mm512_fnmadd_ps(five, e[2], e[4]));
  const __m512 t1 = _mm512_fnmadd_ps(four, e[2], e[4]), t2 = _mm512_fnmadd_ps(four, e[1], e[3]);
  o.v[1] = _mm512_add_ps(t1, t2);
  o.v[2] = _mm512_sub_ps(t1, t2);
  const __m512 t3 = _mm512_sub_ps(e[4], e[2]), t4 = _mm512_sub_ps(e[3], e[1]);
  o.v[3] = _mm512_fmadd_ps(two, t4, t3);
  o.v[4] = _mm512_fnmadd_ps(two, t4, t3);
  o.v[5] = _mm512_fmadd_ps(four, e[1], _mm512_fnmadd_ps(five, e[3], e[5]));
  return o;
}

// G k for one 3-vector (k0, k1, k2).
inline Six KernelRow(__m512 k0, __m512 k1, __m512 k2) {
  const __m512 sixth = Set(1.0f / 6.0f), msixth = Set(-1.0f / 6.0f);
  Six o;
  const __m512 b = _mm512_add_ps(k0, k2);
  o.v[0] = _mm512_mul_ps(k0, Set(0.25f));
  o.v[1] = _mm512_mul_ps(_mm512_add_ps(b, k1), msixth);
  o.v[2] = _mm512_mul_ps(_mm512_sub_ps(b, k1), msixth);
  const __m512 c = _mm512_fmadd_ps(k0, Set(0.25f), k2), h = _mm512_mul_ps(k1, Set(0.5f));
  o.v[3] = _mm512_mul_ps(_mm512_add_ps(c, h), sixth);
  o.v[4] = _mm512_mul_ps(_mm512_sub_ps(c, h), sixth);
  o.v[5] = k2;
  return o;
}

// A^T m for one 6-vector: 4 values.
inline void OutputRow(const __m512 m[6], __m512 o[4]) {
  const __m512 p12 = _mm512_add_ps(m[1], m[2]), d12 = _mm512_sub_ps(m[1], m[2]);
  const __m512 p34 = _mm512_add_ps(m[3], m[4]), d34 = _mm512_sub_ps(m[3], m[4]);
  o[0] = _mm512_add_ps(_mm512_add_ps(m[0], p12), p34);
  o[1] = _mm512_fmadd_ps(Set(2.0f), d34, d12);
  o[2] = _mm512_fmadd_ps(Set(4.0f), p34, p12);
  o[3] = _mm512_add_ps(_mm512_fmadd_ps(Set(8.0f), d34, d12), m[5]);
}

// A d for one 4-vector: 6 values.
inline Six GradientRow(__m512 d0, __m512 d1, __m512 d2, __m512 d3) {
  Six o;
  const __m512 s02 = _mm512_add_ps(d0, d2), s13 = _mm512_add_ps(d1, d3);
  const __m512 t02 = _mm512_fmadd_ps(Set(4.0f), d2, d0);
  const __m512 t13 = _mm512_mul_ps(Set(2.0f), _mm512_fmadd_ps(Set(4.0f), d3, d1));
  o.v[0] = d0;
  o.v[1] = _mm512_add_ps(s02, s13);
  o.v[2] = _mm512_sub_ps(s02, s13);
  o.v[3] = _mm512_add_ps(t02, t13);
  o.v[4] = _mm512_sub_ps(t02, t13);
  o.v[5] = d3;
  return o;
}

// G^T u for one 6-vector: 3 values.
inline void KernelGradientRow(const __m512 u[6], __m512 o[3]) {
  const __m512 sixth = Set(1.0f / 6.0f);
  const __m512 p12 = _mm512_add_ps(u[1], u[2]), d12 = _mm512_sub_ps(u[1], u[2]);
  const __m512 p34 = _mm512_add_ps(u[3], u[4]), d34 = _mm512_sub_ps(u[3], u[4]);
  o[0] = _mm512_fmadd_ps(Set(0.25f), u[0], _mm512_mul_ps(_mm512_fmsub_ps(Set(0.25f), p34, p12), sixth));
  o[1] = _mm512_mul_ps(_mm512_fmsub_ps(Set(0.5f), d34, d12), sixth);
  o[2] = _mm512_fmadd_ps(_mm512_sub_ps(p34, p12), sixth, u[5]);
}

}  // namespace

void TransformInput(const Window& g, const WinogradPlan& p, const float* xn, int t0, int nt, float* v) {
  const int c = g.c;
  const size_t plane = p.v_plane;
  const __m512 z = _mm512_setzero_ps();
  for (int t = 0; t < nt;) {
    // A run of tiles of one tile row; neighbouring tiles share two input columns.
    const int th = (t0 + t) / p.tiles_w, tw0 = (t0 + t) % p.tiles_w;
    const int run = std::min(nt - t, p.tiles_w - tw0);
    const int ih0 = 4 * th - g.pad_top, iw0 = 4 * tw0 - g.pad_left;
    const float* rows[6];
    for (int r = 0; r < 6; ++r) {
      const int ih = ih0 + r;
      rows[r] = ih >= 0 && ih < g.h ? xn + static_cast<size_t>(ih) * g.w * c : nullptr;
    }
    for (int c0 = 0; c0 < c; c0 += 16) {
      const __mmask16 m = TailMask(c - c0);
      // B^T d, one input column (over the 6 rows).
      auto column = [&](int iw) {
        __m512 e[6];
        const bool in = iw >= 0 && iw < g.w;
        const size_t at = static_cast<size_t>(iw) * c + c0;
        for (int r = 0; r < 6; ++r) e[r] = in && rows[r] != nullptr ? _mm512_maskz_loadu_ps(m, rows[r] + at) : z;
        return InputRow(e);
      };
      Six col[6];
      col[4] = column(iw0);
      col[5] = column(iw0 + 1);
      float* dst = v + static_cast<size_t>(t) * c + c0;
      for (int k = 0; k < run; ++k, dst += c) {
        // The input is read once per pass, from memory: fetch these columns of input rows
        // 10..13 from here (two tile rows ahead; each input row gets fetched once).
        for (int r = 10; r < 14; ++r) {
          const int ih = ih0 + r;
          if (ih < 0) continue;
          for (int j = k == 0 ? 0 : 2; j < 6; ++j) {
            const int iw = iw0 + 4 * k + j;
            if (iw >= 0 && iw < g.w) FetchRow(xn, ih, static_cast<size_t>(g.w) * c, static_cast<size_t>(iw) * c + c0);
          }
        }
        col[0] = col[4];
        col[1] = col[5];
        for (int j = 2; j < 6; ++j) col[j] = column(iw0 + 4 * k + j);
        for (int r = 0; r < 6; ++r) {
          const __m512 e[6] = {col[0].v[r], col[1].v[r], col[2].v[r], col[3].v[r], col[4].v[r], col[5].v[r]};
          const Six o = InputRow(e);
          for (int s = 0; s < 6; ++s) _mm512_mask_storeu_ps(dst + (6 * r + s) * plane, m, o.v[s]);
        }
      }
    }
    t += run;
  }
}

void TransformKernel(const float* w, int c, int f, float* u) {
  const size_t cf = static_cast<size_t>(c) * f;
  for (int ci = 0; ci < c; ++ci) {
    for (int f0 = 0; f0 < f; f0 += 16) {
      const __mmask16 m = TailMask(f - f0);
      const size_t at = static_cast<size_t>(ci) * f + f0;
      __m512 k[9];
      for (int tap = 0; tap < 9; ++tap) k[tap] = _mm512_maskz_loadu_ps(m, w + tap * cf + at);
      Six q[3];  // G k, column j
      for (int j = 0; j < 3; ++j) q[j] = KernelRow(k[j], k[3 + j], k[6 + j]);
      for (int r = 0; r < 6; ++r) {  // (G k) G^T
        const Six o = KernelRow(q[0].v[r], q[1].v[r], q[2].v[r]);
        for (int s = 0; s < 6; ++s) _mm512_mask_storeu_ps(u + (6 * r + s) * cf + at, m, o.v[s]);
      }
    }
  }
}

void TransformOutput(const Window& g, const WinogradPlan& p, int filters, const float* mm, int t0, int nt,
                     const float* bias, bool relu, float* yn) {
  const size_t plane = p.m_plane;
  const __m512 z = _mm512_setzero_ps();
  for (int t = 0; t < nt; ++t) {
    const int oh = 4 * ((t0 + t) / p.tiles_w), ow = 4 * ((t0 + t) % p.tiles_w);
    const int rows = std::min(4, g.out_h - oh), cols = std::min(4, g.out_w - ow);
    for (int f0 = 0; f0 < filters; f0 += 16) {
      const __mmask16 m = TailMask(filters - f0);
      const float* src = mm + static_cast<size_t>(t) * filters + f0;
      __m512 q[4][6];  // A^T M: 4 rows x 6 columns
      for (int s = 0; s < 6; ++s) {
        __m512 col[6], o[4];
        for (int r = 0; r < 6; ++r) col[r] = _mm512_maskz_loadu_ps(m, src + (6 * r + s) * plane);
        OutputRow(col, o);
        for (int a = 0; a < 4; ++a) q[a][s] = o[a];
      }
      // Fetch the lines of this tile's columns two tile rows ahead, which get written soon.
      for (int a = 8; a < 12; ++a) {
        for (int b = 0; b < cols; ++b) {
          FetchRow(yn, oh + a, static_cast<size_t>(g.out_w) * filters, static_cast<size_t>(ow + b) * filters + f0);
        }
      }
      const __m512 bv = bias == nullptr ? z : _mm512_maskz_loadu_ps(m, bias + f0);
      for (int a = 0; a < rows; ++a) {
        __m512 o[4];
        OutputRow(q[a], o);
        float* dst = yn + (static_cast<size_t>(oh + a) * g.out_w + ow) * filters + f0;
        for (int b = 0; b < cols; ++b) {
          __m512 out = _mm512_add_ps(o[b], bv);
          if (relu) out = _mm512_max_ps(out, z);
          _mm512_mask_storeu_ps(dst + b * filters, m, out);
        }
      }
    }
  }
}

void TransformGradient(const Window& g, const WinogradPlan& p, int filters, const float* dyn, const float* yn,
                       bool relu, float* dpren, int t0, int nt, float* dm, float* db) {
  const size_t plane = p.m_plane;
  const __m512 z = _mm512_setzero_ps();
  for (int t = 0; t < nt; ++t) {
    const int oh = 4 * ((t0 + t) / p.tiles_w), ow = 4 * ((t0 + t) % p.tiles_w);
    const int rows = std::min(4, g.out_h - oh), cols = std::min(4, g.out_w - ow);
    for (int f0 = 0; f0 < filters; f0 += 16) {
      const __mmask16 m = TailMask(filters - f0);
      // dy (and y) are read once, from memory: fetch this tile's columns two tile rows ahead.
      for (int a = 8; a < 12; ++a) {
        for (int b = 0; b < cols; ++b) {
          const size_t row_floats = static_cast<size_t>(g.out_w) * filters;
          const size_t at = static_cast<size_t>(ow + b) * filters + f0;
          FetchRow(dyn, oh + a, row_floats, at);
          if (relu) FetchRow(yn, oh + a, row_floats, at);
        }
      }
      __m512 d[4][4];
      __m512 dbv = db == nullptr ? z : _mm512_maskz_loadu_ps(m, db + f0);
      for (int a = 0; a < 4; ++a) {
        for (int b = 0; b < 4; ++b) {
          d[a][b] = z;
          if (a >= rows || b >= cols) continue;
          const size_t o = (static_cast<size_t>(oh + a) * g.out_w + ow + b) * filters + f0;
          __m512 v = _mm512_maskz_loadu_ps(m, dyn + o);
          if (relu) v = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(_mm512_maskz_loadu_ps(m, yn + o), z, _CMP_GT_OQ), v);
          if (dpren != nullptr) _mm512_mask_storeu_ps(dpren + o, m, v);
          if (db != nullptr) dbv = _mm512_add_ps(dbv, v);
          d[a][b] = v;
        }
      }
      if (db != nullptr) _mm512_mask_storeu_ps(db + f0, m, dbv);
      Six q[4];  // A dpre, column b
      for (int b = 0; b < 4; ++b) q[b] = GradientRow(d[0][b], d[1][b], d[2][b], d[3][b]);
      float* dst = dm + static_cast<size_t>(t) * filters + f0;
      for (int r = 0; r < 6; ++r) {  // (A dpre) A^T
        const Six o = GradientRow(q[0].v[r], q[1].v[r], q[2].v[r], q[3].v[r]);
        for (int s = 0; s < 6; ++s) _mm512_mask_storeu_ps(dst + (6 * r + s) * plane, m, o.v[s]);
      }
    }
  }
}

void TransformKernelGradient(const float* du, int c, int f, float* dw) {
  const size_t cf = static_cast<size_t>(c) * f;
  for (int ci = 0; ci < c; ++ci) {
    for (int f0 = 0; f0 < f; f0 += 16) {
      const __mmask16 m = TailMask(f - f0);
      const size_t at = static_cast<size_t>(ci) * f + f0;
      __m512 q[3][6];  // G^T dU: 3 rows x 6 columns
      for (int s = 0; s < 6; ++s) {
        __m512 col[6], o[3];
        for (int r = 0; r < 6; ++r) col[r] = _mm512_maskz_loadu_ps(m, du + (6 * r + s) * cf + at);
        KernelGradientRow(col, o);
        for (int i = 0; i < 3; ++i) q[i][s] = o[i];
      }
      for (int i = 0; i < 3; ++i) {  // (G^T dU) G
        __m512 o[3];
        KernelGradientRow(q[i], o);
        for (int j = 0; j < 3; ++j) _mm512_mask_storeu_ps(dw + (3 * i + j) * cf + at, m, o[j]);
      }
    }
  }
}

}  // namespace ringtrain::kernels::avx512::wino4
