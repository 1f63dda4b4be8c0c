#include "kernels/im2col.h"

#include <algorithm>
#include <cstring>

namespace ringtrain::kernels {

void Im2Col(const Window& g, const float* x, int batch, float* cols) {
  const int C = g.c, H = g.h, W = g.w;
  const size_t row_len = static_cast<size_t>(g.kw) * C;  // one kernel row of the window
  float* dst = cols;
  for (int n = 0; n < batch; ++n) {
    const float* img = x + static_cast<size_t>(n) * H * W * C;
    for (int oh = 0; oh < g.out_h; ++oh) {
      const int ih0 = oh * g.stride_h - g.pad_top;
      for (int ow = 0; ow < g.out_w; ++ow) {
        const int iw0 = ow * g.stride_w - g.pad_left;
        const bool w_inside = iw0 >= 0 && iw0 + g.kw <= W;
        for (int i = 0; i < g.kh; ++i, dst += row_len) {
          const int ih = ih0 + i;
          if (ih < 0 || ih >= H) {
            std::memset(dst, 0, row_len * sizeof(float));
            continue;
          }
          const float* src_row = img + static_cast<size_t>(ih) * W * C;
          if (w_inside) {  // the common case: one contiguous run of KW*C floats
            std::memcpy(dst, src_row + static_cast<size_t>(iw0) * C, row_len * sizeof(float));
            continue;
          }
          for (int j = 0; j < g.kw; ++j) {
            const int iw = iw0 + j;
            float* d = dst + static_cast<size_t>(j) * C;
            if (iw < 0 || iw >= W) {
              std::memset(d, 0, C * sizeof(float));
            } else {
              std::memcpy(d, src_row + static_cast<size_t>(iw) * C, C * sizeof(float));
            }
          }
        }
      }
    }
  }
}

void Col2Im(const Window& g, const float* cols, int batch, float* dx) {
  const int C = g.c, H = g.h, W = g.w;
  const size_t row_len = static_cast<size_t>(g.kw) * C;
  std::fill(dx, dx + static_cast<size_t>(batch) * H * W * C, 0.0f);
  const float* src = cols;
  for (int n = 0; n < batch; ++n) {
    float* img = dx + static_cast<size_t>(n) * H * W * C;
    for (int oh = 0; oh < g.out_h; ++oh) {
      const int ih0 = oh * g.stride_h - g.pad_top;
      for (int ow = 0; ow < g.out_w; ++ow) {
        const int iw0 = ow * g.stride_w - g.pad_left;
        const bool w_inside = iw0 >= 0 && iw0 + g.kw <= W;
        for (int i = 0; i < g.kh; ++i, src += row_len) {
          const int ih = ih0 + i;
          if (ih < 0 || ih >= H) continue;
          float* dst_row = img + static_cast<size_t>(ih) * W * C;
          if (w_inside) {
            float* d = dst_row + static_cast<size_t>(iw0) * C;
            for (size_t t = 0; t < row_len; ++t) d[t] += src[t];
            continue;
          }
          for (int j = 0; j < g.kw; ++j) {
            const int iw = iw0 + j;
            if (iw < 0 || iw >= W) continue;
            float* d = dst_row + static_cast<size_t>(iw) * C;
            const float* s = src + static_cast<size_t>(j) * C;
            for (int c = 0; c < C; ++c) d[c] += s[c];
          }
        }
      }
    }
  }
}

}  // namespace ringtrain::kernels
