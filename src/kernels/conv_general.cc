// The convolutions outside the fast paths: grouped and dilated Conv2D (im2col per group
// plus OpenBLAS sgemm on one thread) and depthwise Conv2D (direct loops over contiguous
// channels). Both implementations of kernels.h share these; every loop runs in a fixed
// order on the caller's thread, so the bits do not depend on the thread count.
#include <cblas.h>

#include <algorithm>
#include <cstring>

#include "kernels/kernels.h"

namespace ringtrain::kernels {
namespace {

// The input row/column tap i of output index o reads, or -1 outside the input.
inline int TapRow(const Window& g, int oh, int i) {
  const int ih = oh * g.stride_h - g.pad_top + i * g.dilation_h;
  return ih >= 0 && ih < g.h ? ih : -1;
}
inline int TapCol(const Window& g, int ow, int j) {
  const int iw = ow * g.stride_w - g.pad_left + j * g.dilation_w;
  return iw >= 0 && iw < g.w ? iw : -1;
}

// cols[(n*OH + oh)*OW + ow, (i*KW + j)*cg + c] = x[n, ih(oh, i), iw(ow, j), c0 + c], zero
// outside the input.
void GroupIm2Col(const Window& g, int c0, int cg, const float* x, int batch, float* cols) {
  const size_t img_size = g.in_size();
  float* dst = cols;
  for (int n = 0; n < batch; ++n) {
    const float* img = x + static_cast<size_t>(n) * img_size + c0;
    for (int oh = 0; oh < g.out_h; ++oh) {
      for (int ow = 0; ow < g.out_w; ++ow) {
        for (int i = 0; i < g.kh; ++i) {
          const int ih = TapRow(g, oh, i);
          for (int j = 0; j < g.kw; ++j, dst += cg) {
            const int iw = ih < 0 ? -1 : TapCol(g, ow, j);
            if (iw < 0) {
              std::memset(dst, 0, static_cast<size_t>(cg) * sizeof(float));
            } else {
              std::memcpy(dst, img + (static_cast<size_t>(ih) * g.w + iw) * g.c, static_cast<size_t>(cg) * sizeof(float));
            }
          }
        }
      }
    }
  }
}

// The adjoint of GroupIm2Col, added into dx (which the caller zeroed).
void GroupCol2ImAdd(const Window& g, int c0, int cg, const float* cols, int batch, float* dx) {
  const size_t img_size = g.in_size();
  const float* src = cols;
  for (int n = 0; n < batch; ++n) {
    float* img = dx + static_cast<size_t>(n) * img_size + c0;
    for (int oh = 0; oh < g.out_h; ++oh) {
      for (int ow = 0; ow < g.out_w; ++ow) {
        for (int i = 0; i < g.kh; ++i) {
          const int ih = TapRow(g, oh, i);
          for (int j = 0; j < g.kw; ++j, src += cg) {
            const int iw = ih < 0 ? -1 : TapCol(g, ow, j);
            if (iw < 0) continue;
            float* d = img + (static_cast<size_t>(ih) * g.w + iw) * g.c;
            for (int c = 0; c < cg; ++c) d[c] += src[c];
          }
        }
      }
    }
  }
}

void BiasRelu(float* y, size_t rows, int units, const float* bias, bool relu) {
  if (bias == nullptr && !relu) return;
  for (size_t r = 0; r < rows; ++r) {
    float* row = y + r * units;
    if (bias != nullptr) {
      for (int u = 0; u < units; ++u) row[u] += bias[u];
    }
    if (relu) {
      for (int u = 0; u < units; ++u) row[u] = row[u] > 0.0f ? row[u] : 0.0f;
    }
  }
}

}  // namespace

size_t GroupedConvScratch(const Window& g, int groups, int batch) {
  return static_cast<size_t>(batch) * g.out_h * g.out_w * g.kh * g.kw * (g.c / groups);
}

void GroupedConvForward(const Window& g, int groups, int filters, const float* x, int batch, const float* w,
                        const float* bias, bool relu, float* y, float* scratch) {
  const int cg = g.c / groups, fg = filters / groups;
  const int M = batch * g.out_h * g.out_w, K = g.kh * g.kw * cg;
  for (int gi = 0; gi < groups; ++gi) {
    GroupIm2Col(g, gi * cg, cg, x, batch, scratch);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, fg, K, 1.0f, scratch, K, w + gi * fg, filters, 0.0f,
                y + gi * fg, filters);
  }
  BiasRelu(y, static_cast<size_t>(M), filters, bias, relu);
}

void GroupedConvFilterGrad(const Window& g, int groups, int filters, const float* x, const float* d, int batch,
                           float* dw, float* scratch) {
  const int cg = g.c / groups, fg = filters / groups;
  const int M = batch * g.out_h * g.out_w, K = g.kh * g.kw * cg;
  for (int gi = 0; gi < groups; ++gi) {
    GroupIm2Col(g, gi * cg, cg, x, batch, scratch);
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, K, fg, M, 1.0f, scratch, K, d + gi * fg, filters, 0.0f,
                dw + gi * fg, filters);
  }
}

void GroupedConvInputGrad(const Window& g, int groups, int filters, const float* d, const float* w, int batch,
                          float* dx, float* scratch) {
  const int cg = g.c / groups, fg = filters / groups;
  const int M = batch * g.out_h * g.out_w, K = g.kh * g.kw * cg;
  std::fill(dx, dx + static_cast<size_t>(batch) * g.in_size(), 0.0f);
  for (int gi = 0; gi < groups; ++gi) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, K, fg, 1.0f, d + gi * fg, filters, w + gi * fg, filters,
                0.0f, scratch, K);
    GroupCol2ImAdd(g, gi * cg, cg, scratch, batch, dx);
  }
}

// Calls tap(n, pixel, ih, iw, t) for every kernel tap that lands inside the input, in the
// order image, output row, output column, kernel row, kernel column: `pixel` indexes the
// output position over the batch, `t` the tap in the kernel. The three depthwise passes
// share it, so each adds in that one order.
template <typename Tap>
inline void ForEachDepthwiseTap(const Window& g, int batch, Tap&& tap) {
  for (int n = 0; n < batch; ++n) {
    for (int oh = 0; oh < g.out_h; ++oh) {
      for (int ow = 0; ow < g.out_w; ++ow) {
        const size_t pixel = (static_cast<size_t>(n) * g.out_h + oh) * g.out_w + ow;
        for (int i = 0; i < g.kh; ++i) {
          const int ih = TapRow(g, oh, i);
          if (ih < 0) continue;
          for (int j = 0; j < g.kw; ++j) {
            const int iw = TapCol(g, ow, j);
            if (iw < 0) continue;
            tap(n, pixel, ih, iw, i * g.kw + j);
          }
        }
      }
    }
  }
}

void DepthwiseConvForward(const Window& g, int multiplier, const float* x, int batch, const float* w,
                          const float* bias, bool relu, float* y) {
  const int C = g.c, m = multiplier, F = C * m;
  const size_t pixels = static_cast<size_t>(batch) * g.out_h * g.out_w;
  std::fill(y, y + pixels * F, 0.0f);
  ForEachDepthwiseTap(g, batch, [&](int n, size_t pixel, int ih, int iw, int t) {
    float* __restrict o = y + pixel * F;
    const float* __restrict xp = x + static_cast<size_t>(n) * g.in_size() + (static_cast<size_t>(ih) * g.w + iw) * C;
    const float* __restrict wt = w + static_cast<size_t>(t) * F;
    if (m == 1) {
      for (int c = 0; c < C; ++c) o[c] += xp[c] * wt[c];
    } else {
      for (int c = 0; c < C; ++c) {
        for (int k = 0; k < m; ++k) o[c * m + k] += xp[c] * wt[c * m + k];
      }
    }
  });
  for (size_t p = 0; p < pixels; ++p) {
    float* __restrict o = y + p * F;
    if (bias != nullptr) {
      for (int f = 0; f < F; ++f) o[f] += bias[f];
    }
    if (relu) {
      for (int f = 0; f < F; ++f) o[f] = o[f] > 0.0f ? o[f] : 0.0f;
    }
  }
}

void DepthwiseConvFilterGrad(const Window& g, int multiplier, const float* x, const float* d, int batch, float* dw) {
  const int C = g.c, m = multiplier, F = C * m;
  std::fill(dw, dw + static_cast<size_t>(g.kh) * g.kw * F, 0.0f);
  ForEachDepthwiseTap(g, batch, [&](int n, size_t pixel, int ih, int iw, int t) {
    const float* __restrict dp = d + pixel * F;
    const float* __restrict xp = x + static_cast<size_t>(n) * g.in_size() + (static_cast<size_t>(ih) * g.w + iw) * C;
    float* __restrict wt = dw + static_cast<size_t>(t) * F;
    if (m == 1) {
      for (int c = 0; c < C; ++c) wt[c] += xp[c] * dp[c];
    } else {
      for (int c = 0; c < C; ++c) {
        for (int k = 0; k < m; ++k) wt[c * m + k] += xp[c] * dp[c * m + k];
      }
    }
  });
}

void DepthwiseConvInputGrad(const Window& g, int multiplier, const float* d, const float* w, int batch, float* dx) {
  const int C = g.c, m = multiplier, F = C * m;
  std::fill(dx, dx + static_cast<size_t>(batch) * g.in_size(), 0.0f);
  ForEachDepthwiseTap(g, batch, [&](int n, size_t pixel, int ih, int iw, int t) {
    const float* __restrict dp = d + pixel * F;
    float* __restrict xp = dx + static_cast<size_t>(n) * g.in_size() + (static_cast<size_t>(ih) * g.w + iw) * C;
    const float* __restrict wt = w + static_cast<size_t>(t) * F;
    if (m == 1) {
      for (int c = 0; c < C; ++c) xp[c] += wt[c] * dp[c];
    } else {
      for (int c = 0; c < C; ++c) {
        float s = 0.0f;
        for (int k = 0; k < m; ++k) s += wt[c * m + k] * dp[c * m + k];
        xp[c] += s;
      }
    }
  });
}

}  // namespace ringtrain::kernels
