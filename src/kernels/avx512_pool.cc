// AVX-512 max pooling: vectors run over the channels of one window cell.
#include <immintrin.h>

#include <algorithm>

#include "kernels/avx512_util.h"
#include "kernels/impl.h"
#include "kernels/thread_pool.h"

namespace ringtrain::kernels::avx512 {
namespace {

// The window of output (oh, ow) clipped to the input ('same' padding cells are ignored).
struct Span {
  int h0, h1, w0, w1;
};

Span Clip(const Window& g, int oh, int ow) {
  const int h = oh * g.stride_h - g.pad_top, w = ow * g.stride_w - g.pad_left;
  return {std::max(h, 0), std::min(h + g.kh, g.h), std::max(w, 0), std::min(w + g.kw, g.w)};
}

}  // namespace

void MaxPoolForward(const Window& g, const float* x, int batch, float* y) {
  const int C = g.c;
  ParallelFor(batch, [&](int64_t begin, int64_t end) {
    for (int64_t n = begin; n < end; ++n) {
      const float* img = x + static_cast<size_t>(n) * g.in_size();
      float* out = y + static_cast<size_t>(n) * g.out_h * g.out_w * C;
      for (int oh = 0; oh < g.out_h; ++oh) {
        for (int ow = 0; ow < g.out_w; ++ow, out += C) {
          const Span s = Clip(g, oh, ow);
          for (int c0 = 0; c0 < C; c0 += 16) {
            const __mmask16 m = TailMask(C - c0);
            __m512 best = _mm512_maskz_loadu_ps(m, img + (static_cast<size_t>(s.h0) * g.w + s.w0) * C + c0);
            for (int ih = s.h0; ih < s.h1; ++ih) {
              for (int iw = s.w0; iw < s.w1; ++iw) {
                const __m512 v = _mm512_maskz_loadu_ps(m, img + (static_cast<size_t>(ih) * g.w + iw) * C + c0);
                best = _mm512_mask_mov_ps(best, _mm512_cmp_ps_mask(v, best, _CMP_GT_OQ), v);  // strictly larger
              }
            }
            _mm512_mask_storeu_ps(out + c0, m, best);
          }
        }
      }
    }
  });
}

void MaxPoolBackward(const Window& g, const float* x, const float* y, const float* dy, int batch, float* dx) {
  const int C = g.c;
  ParallelFor(batch, [&](int64_t begin, int64_t end) {
    for (int64_t n = begin; n < end; ++n) {
      const float* img = x + static_cast<size_t>(n) * g.in_size();
      float* din = dx + static_cast<size_t>(n) * g.in_size();
      for (size_t i = 0; i < g.in_size(); ++i) din[i] = 0.0f;
      const size_t out0 = static_cast<size_t>(n) * g.out_h * g.out_w * C;
      const float* yo = y + out0;
      const float* go = dy + out0;
      for (int oh = 0; oh < g.out_h; ++oh) {
        for (int ow = 0; ow < g.out_w; ++ow, yo += C, go += C) {
          const Span s = Clip(g, oh, ow);
          for (int c0 = 0; c0 < C; c0 += 16) {
            const __mmask16 m = TailMask(C - c0);
            const __m512 best = _mm512_maskz_loadu_ps(m, yo + c0);
            const __m512 grad = _mm512_maskz_loadu_ps(m, go + c0);
            __mmask16 open = m;  // lanes whose maximal cell is not found yet
            for (int ih = s.h0; ih < s.h1 && open != 0; ++ih) {
              for (int iw = s.w0; iw < s.w1 && open != 0; ++iw) {
                const size_t cell = (static_cast<size_t>(ih) * g.w + iw) * C + c0;
                const __mmask16 hit = _mm512_mask_cmp_ps_mask(open, _mm512_maskz_loadu_ps(m, img + cell), best, _CMP_EQ_OQ);
                if (hit != 0) {
                  _mm512_mask_storeu_ps(din + cell, hit, _mm512_add_ps(_mm512_maskz_loadu_ps(hit, din + cell), grad));
                  open = static_cast<__mmask16>(open & ~hit);
                }
              }
            }
          }
        }
      }
    }
  });
}

}  // namespace ringtrain::kernels::avx512
