// AVX-512 input gradient of strided convolutions (ConvInputGradStrided, impl.h): each
// parity class of input cells is a stride-1 convolution of the zero-padded gradient
// with a flipped, transposed sub-kernel, run through the forward's register tiles.
#include <immintrin.h>

#include <algorithm>

#include "kernels/avx512_conv_tiles.h"
#include "kernels/impl.h"
#include "kernels/thread_pool.h"

namespace ringtrain::kernels::avx512 {

using tiles::FilterGroup;
using tiles::ForEachPixelTile;
using tiles::Geometry;
using tiles::GroupAt;
using tiles::PickForward;
using tiles::kFilterGroup;
using tiles::kMaxPixels1;
using tiles::kMaxPixels2;

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
