#include "nn/window.h"

#include <algorithm>
#include <cstring>

namespace ringtrain::nn {

StatusOr<Window1D> MakeWindow(int in, int k, int stride, Padding padding, const char* what, const char* axis,
                              const std::string& ctx) {
  Window1D w;
  w.in = in;
  w.k = k;
  w.stride = stride;
  if (padding == Padding::kValid) {
    if (k > in) {
      return InvalidArgumentError(ctx + ": the " + what + " " + axis + " " + std::to_string(k) +
                                  " is larger than the input " + axis + " " + std::to_string(in) +
                                  " with padding 'valid'; use a smaller " + what + " or padding 'same'");
    }
    w.out = (in - k) / stride + 1;
    w.pad_before = 0;
  } else {
    w.out = (in + stride - 1) / stride;
    int pad_total = std::max((w.out - 1) * stride + k - in, 0);
    w.pad_before = pad_total / 2;
  }
  return w;
}

void Im2Col(const Window2D& g, const float* in, int batch, float* cols) {
  const int C = g.channels, H = g.h.in, W = g.w.in;
  const size_t row_len = static_cast<size_t>(g.w.k) * C;  // one kernel row of the window
  float* dst = cols;
  for (int n = 0; n < batch; ++n) {
    const float* img = in + static_cast<size_t>(n) * H * W * C;
    for (int oh = 0; oh < g.h.out; ++oh) {
      const int ih0 = oh * g.h.stride - g.h.pad_before;
      for (int ow = 0; ow < g.w.out; ++ow) {
        const int iw0 = ow * g.w.stride - g.w.pad_before;
        const bool w_inside = iw0 >= 0 && iw0 + g.w.k <= W;
        for (int i = 0; i < g.h.k; ++i, dst += row_len) {
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
          for (int j = 0; j < g.w.k; ++j) {
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

void Col2Im(const Window2D& g, const float* cols, int batch, float* din) {
  const int C = g.channels, H = g.h.in, W = g.w.in;
  const size_t row_len = static_cast<size_t>(g.w.k) * C;
  std::fill(din, din + static_cast<size_t>(batch) * H * W * C, 0.0f);
  const float* src = cols;
  for (int n = 0; n < batch; ++n) {
    float* img = din + static_cast<size_t>(n) * H * W * C;
    for (int oh = 0; oh < g.h.out; ++oh) {
      const int ih0 = oh * g.h.stride - g.h.pad_before;
      for (int ow = 0; ow < g.w.out; ++ow) {
        const int iw0 = ow * g.w.stride - g.w.pad_before;
        const bool w_inside = iw0 >= 0 && iw0 + g.w.k <= W;
        for (int i = 0; i < g.h.k; ++i, src += row_len) {
          const int ih = ih0 + i;
          if (ih < 0 || ih >= H) continue;
          float* dst_row = img + static_cast<size_t>(ih) * W * C;
          if (w_inside) {
            float* d = dst_row + static_cast<size_t>(iw0) * C;
            for (size_t t = 0; t < row_len; ++t) d[t] += src[t];
            continue;
          }
          for (int j = 0; j < g.w.k; ++j) {
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

}  // namespace ringtrain::nn
