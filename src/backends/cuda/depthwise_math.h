// The per-element arithmetic of the GPU's depthwise convolution (backends/cuda/depthwise_conv.cu),
// as inline functions that compile for the host and the device: the CUDA kernels call
// them on the GPU, and tests/gpu/depthwise_math_test.cc calls them on the host against
// the CPU's kernels::DepthwiseConv* (src/kernels/conv_general.cc).
//
// Layouts are Keras': NHWC input x [batch, h, w, c]; kernel w [kh, kw, c, m] (tap
// t = i * kw + j, then F = c * m values); output channel f = c * m + k reads input
// channel c = f / m. Dilation is honoured (window tap (i, j) reads input cell
// (oh * stride_h - pad_top + i * dilation_h, ow * stride_w - pad_left + j * dilation_w)).
//
// Every sum repeats the CPU's order: starting from 0.0f, the taps that land inside the
// input in the order image, output row, output column, kernel row, kernel column (the
// CPU's ForEachDepthwiseTap), each product rounded on its own (nvcc builds the kernels
// with --fmad=false). The forward and input-gradient elements are then the CPU's bits;
// the filter gradient is too while it runs in one lane (up to dm::kBiasGradLaneRows
// output pixels), and above that is summed in fixed chunks of pixels, each in order, then
// the chunks in order (dm::BiasGradLanes / BiasGradChunk): the same bits every run.
//
// Header-only, no CUDA dependency. Pure functions of their arguments.
#pragma once

#include <cstdint>

#include "backends/cuda/device_math.h"  // RT_HD, dm::BiasGradLanes / BiasGradChunk
#include "ops/window.h"

namespace ringtrain::gpu::dwm {

// The input row / column that tap i / j of output row / column o reads, or -1 outside the input.
RT_HD inline int TapRow(const ops::Window& g, int oh, int i) {
  const int ih = oh * g.stride_h - g.pad_top + i * g.dilation_h;
  return ih >= 0 && ih < g.h ? ih : -1;
}
RT_HD inline int TapCol(const ops::Window& g, int ow, int j) {
  const int iw = ow * g.stride_w - g.pad_left + j * g.dilation_w;
  return iw >= 0 && iw < g.w ? iw : -1;
}

// The output row (or column) whose tap `tap` reads input row `i`, or -1 when none does:
// o * stride - pad + tap * dilation == i, 0 <= o < out.
RT_HD inline int CoveringOutput(int i, int tap, int stride, int pad, int dilation, int out) {
  const int num = i + pad - tap * dilation;
  if (num < 0 || num % stride != 0) return -1;
  const int o = num / stride;
  return o < out ? o : -1;
}

// Output element (oh, ow, f) of one example before the bias: the sum over the taps
// inside the input of x * w. `img` is the example's input [h, w, c].
RT_HD inline float ForwardElement(const ops::Window& g, int multiplier, const float* img, const float* w, int oh,
                                  int ow, int f) {
  const int F = g.c * multiplier;
  const int c = f / multiplier;
  float sum = 0.0f;
  for (int i = 0; i < g.kh; ++i) {
    const int ih = TapRow(g, oh, i);
    if (ih < 0) continue;
    for (int j = 0; j < g.kw; ++j) {
      const int iw = TapCol(g, ow, j);
      if (iw < 0) continue;
      const float xv = img[(static_cast<int64_t>(ih) * g.w + iw) * g.c + c];
      const float wv = w[static_cast<int64_t>(i * g.kw + j) * F + f];
      sum += xv * wv;
    }
  }
  return sum;
}

// The input gradient of cell (ih, iw, c) of one example: over the output pixels whose
// taps read it, in row-major output order (the CPU's order of its '+=' into dx), the
// tap's w * d (with a multiplier, the sum over k of w * d first, as the CPU). `d` is the
// example's gradient before the activation [out_h, out_w, c * m].
RT_HD inline float InputGradElement(const ops::Window& g, int multiplier, const float* d, const float* w, int ih,
                                    int iw, int c) {
  const int F = g.c * multiplier;
  float sum = 0.0f;
  // Later output rows read the cell through earlier kernel rows: i descending is oh ascending.
  for (int i = g.kh - 1; i >= 0; --i) {
    const int oh = CoveringOutput(ih, i, g.stride_h, g.pad_top, g.dilation_h, g.out_h);
    if (oh < 0) continue;
    for (int j = g.kw - 1; j >= 0; --j) {
      const int ow = CoveringOutput(iw, j, g.stride_w, g.pad_left, g.dilation_w, g.out_w);
      if (ow < 0) continue;
      const float* dp = d + (static_cast<int64_t>(oh) * g.out_w + ow) * F;
      const float* wt = w + static_cast<int64_t>(i * g.kw + j) * F;
      if (multiplier == 1) {
        sum += wt[c] * dp[c];
      } else {
        float s = 0.0f;
        for (int k = 0; k < multiplier; ++k) s += wt[c * multiplier + k] * dp[c * multiplier + k];
        sum += s;
      }
    }
  }
  return sum;
}

// The filter gradient of tap t, channel f, over output pixels [begin, end) of the batch
// (pixel = (n * out_h + oh) * out_w + ow), in pixel order from 0.0f: the sum of x * d over
// the pixels whose tap t lands inside the input. x is [batch, h, w, c], d [pixels, c * m].
RT_HD inline float FilterGradChunk(const ops::Window& g, int multiplier, const float* x, const float* d, int64_t begin,
                                   int64_t end, int t, int f) {
  const int F = g.c * multiplier;
  const int c = f / multiplier;
  const int i = t / g.kw, j = t % g.kw;
  const int64_t per_image = static_cast<int64_t>(g.out_h) * g.out_w;
  const int64_t in_size = static_cast<int64_t>(g.h) * g.w * g.c;
  float sum = 0.0f;
  for (int64_t p = begin; p < end; ++p) {
    const int64_t n = p / per_image;
    const int64_t rest = p % per_image;
    const int oh = static_cast<int>(rest / g.out_w);
    const int ow = static_cast<int>(rest % g.out_w);
    const int ih = TapRow(g, oh, i);
    if (ih < 0) continue;
    const int iw = TapCol(g, ow, j);
    if (iw < 0) continue;
    const float xv = x[n * in_size + (static_cast<int64_t>(ih) * g.w + iw) * g.c + c];
    sum += xv * d[p * F + f];
  }
  return sum;
}

// How many chunks the filter gradient's pixels are summed in (one up to
// dm::kBiasGradLaneRows pixels: the CPU's order), and chunk `lane`'s pixels.
RT_HD inline int64_t FilterGradLanes(int64_t pixels) { return dm::BiasGradLanes(pixels); }
RT_HD inline void FilterGradPixels(int64_t pixels, int64_t lanes, int64_t lane, int64_t* begin, int64_t* end) {
  dm::BiasGradChunk(pixels, lanes, lane, begin, end);
}

}  // namespace ringtrain::gpu::dwm
