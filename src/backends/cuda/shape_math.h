// The per-element index and arithmetic functions of the CUDA kernels for the shape and
// merge ops (backends/cuda/shape_kernels.cu): average pooling, global max and average
// pooling, zero padding, rescaling, concatenation and the element-wise Add and Multiply
// chains. The kernels call them on the GPU; tests/gpu/shape_math_test.cc calls the same
// functions in the kernels' loops on the host and compares them with the CPU layers
// (src/nn/layers/avg_pool2d.cc, global_pool2d.cc, zero_padding2d.cc, rescaling.cc,
// merge_layers.cc).
//
// Every sum and product runs in the CPU layer's order, each rounded on its own: nvcc
// compiles the kernels with --fmad=false, and host callers build with -ffp-contract=off
// (or for a target without FMA). The CPU's order of additions into one cell is a fixed
// function of the shape, so the kernels' sums are too: no atomics anywhere.
//
// Header-only, no CUDA dependency; every function is pure; any thread may call it.
#pragma once

#include <cstddef>
#include <cstdint>

#include "ops/window.h"

#if !defined(RT_HD)
#if defined(__CUDACC__)
#define RT_HD __host__ __device__
#else
#define RT_HD
#endif
#endif

namespace ringtrain::gpu::shape {

// ---------------------------------------------------------------- NHWC indices
// Element i of a [batch, h, w, c] tensor.
struct Nhwc {
  int64_t n;
  int h, w, c;
};

RT_HD inline Nhwc SplitNhwc(int64_t i, int h, int w, int c) {
  Nhwc r;
  r.c = static_cast<int>(i % c);
  int64_t rest = i / c;
  r.w = static_cast<int>(rest % w);
  rest /= w;
  r.h = static_cast<int>(rest % h);
  r.n = rest / h;
  return r;
}

// ---------------------------------------------------------------- average pooling
// The input cells [h0, h1) x [w0, w1) of output (oh, ow): its window clipped to the
// input (padding cells are not counted), as the CPU layer's CellsOf.
struct Cells {
  int h0, h1, w0, w1;
};

RT_HD inline Cells AvgPoolCells(const ops::Window& g, int oh, int ow) {
  const int top = oh * g.stride_h - g.pad_top, left = ow * g.stride_w - g.pad_left;
  Cells r;
  r.h0 = top > 0 ? top : 0;
  r.h1 = top + g.kh < g.h ? top + g.kh : g.h;
  r.w0 = left > 0 ? left : 0;
  r.w1 = left + g.kw < g.w ? left + g.kw : g.w;
  return r;
}

// The divisor of output (oh, ow): how many input cells its window holds, as a float.
RT_HD inline float AvgPoolCount(const Cells& k) { return static_cast<float>((k.h1 - k.h0) * (k.w1 - k.w0)); }

// Output (oh, ow, c) of one example's NHWC input `img`: the window's cells summed from
// 0.0f in row-major order, then divided by their count.
RT_HD inline float AvgPoolValue(const ops::Window& g, const float* img, int oh, int ow, int c) {
  const Cells k = AvgPoolCells(g, oh, ow);
  float sum = 0.0f;
  for (int ih = k.h0; ih < k.h1; ++ih) {
    for (int iw = k.w0; iw < k.w1; ++iw) sum += img[(static_cast<int64_t>(ih) * g.w + iw) * g.c + c];
  }
  return sum / AvgPoolCount(k);
}

// The first and one-past-last outputs along one axis whose (unclipped) windows hold
// input index i: o * stride - pad <= i < o * stride - pad + k, within [0, out).
// Needs pad >= 0 and i >= 0.
RT_HD inline void PoolCover(int i, int stride, int pad, int k, int out, int* lo, int* hi) {
  const int top = i + pad;         // o * stride <= top
  const int bottom = top - k + 1;  // o * stride >= bottom
  const int first = bottom <= 0 ? 0 : (bottom + stride - 1) / stride;
  int last = top / stride + 1;
  if (last > out) last = out;
  *lo = first;
  *hi = last > first ? last : first;
}

// The gradient of input cell (ih, iw, c) of one example: sum, from 0.0f in row-major
// output order (the order of the CPU's '+=' into this cell), of dy / count over the
// outputs whose windows hold the cell. dy points at the example's [out_h, out_w, c].
RT_HD inline float AvgPoolGather(const ops::Window& g, const float* dy, int ih, int iw, int c) {
  int oh0, oh1, ow0, ow1;
  PoolCover(ih, g.stride_h, g.pad_top, g.kh, g.out_h, &oh0, &oh1);
  PoolCover(iw, g.stride_w, g.pad_left, g.kw, g.out_w, &ow0, &ow1);
  float sum = 0.0f;
  for (int oh = oh0; oh < oh1; ++oh) {
    for (int ow = ow0; ow < ow1; ++ow) {
      const float count = AvgPoolCount(AvgPoolCells(g, oh, ow));
      sum += dy[(static_cast<int64_t>(oh) * g.out_w + ow) * g.c + c] / count;
    }
  }
  return sum;
}

// ---------------------------------------------------------------- global pooling
// Channel c of one example's [pixels, channels] input: pixel 0, then the others added
// in pixel order, divided by the pixel count.
RT_HD inline float GlobalAvgValue(const float* img, int pixels, int channels, int c) {
  float sum = img[c];
  for (int p = 1; p < pixels; ++p) sum += img[static_cast<int64_t>(p) * channels + c];
  return sum / static_cast<float>(pixels);
}

// Channel c's maximum over the pixels, from pixel 0; a later pixel wins only when
// strictly greater (ties and a NaN at pixel 0 keep pixel 0, as the CPU). Writes the
// winning pixel to *arg.
RT_HD inline float GlobalMaxValue(const float* img, int pixels, int channels, int c, int32_t* arg) {
  float best = img[c];
  int32_t at = 0;
  for (int p = 1; p < pixels; ++p) {
    const float v = img[static_cast<int64_t>(p) * channels + c];
    const bool more = v > best;
    best = more ? v : best;
    at = more ? p : at;
  }
  *arg = at;
  return best;
}

// The gradient of pixel p of a channel whose output gradient is dy: the max pool's
// goes to the winning pixel only; the average's is dy / pixels everywhere.
RT_HD inline float GlobalMaxGrad(float dy, int32_t arg, int p) { return arg == p ? dy : 0.0f; }
RT_HD inline float GlobalAvgGrad(float dy, int pixels) { return dy / static_cast<float>(pixels); }

// ---------------------------------------------------------------- zero padding
// The input cell of output (oh, ow) of a zero padding by (top, left) of an in_h x in_w
// input: true with (*ih, *iw) inside the input, false for a padding cell.
RT_HD inline bool ZeroPadSource(int oh, int ow, int top, int left, int in_h, int in_w, int* ih, int* iw) {
  *ih = oh - top;
  *iw = ow - left;
  return *ih >= 0 && *ih < in_h && *iw >= 0 && *iw < in_w;
}

// ---------------------------------------------------------------- rescaling
// y = x * scale + offset, the product rounded before the sum; dx = dy * scale.
RT_HD inline float Rescale(float x, float scale, float offset) { return x * scale + offset; }
RT_HD inline float RescaleGrad(float dy, float scale) { return dy * scale; }

// ---------------------------------------------------------------- concatenation
// The layout along per-example axis `axis` of an input of `rank` dims: the rows before
// the axis (the same for every input), and the floats of one row from the axis on.
RT_HD inline int64_t ConcatOuter(const int* dims, int axis) {
  int64_t outer = 1;
  for (int d = 0; d < axis; ++d) outer *= dims[d];
  return outer;
}
RT_HD inline int64_t ConcatChunk(const int* dims, int rank, int axis) {
  int64_t chunk = 1;
  for (int d = axis; d < rank; ++d) chunk *= dims[d];
  return chunk;
}

// Per example, the output is `outer` rows; row r holds every input's chunk of it, in
// input order (input k's chunk: chunk_k floats at `offset_k` within the row of
// `row_total` floats). Element j of row r of input k sits at this output index.
RT_HD inline int64_t ConcatOutputIndex(int64_t r, int64_t j, int64_t row_total, int64_t offset_k) {
  return r * row_total + offset_k + j;
}

// ---------------------------------------------------------------- Add and Multiply
// One link of the merge layers' left-to-right chains: the CPU's Add is
// ((x0 + x1) + x2) + ..., its Multiply ((x0 * x1) * x2) * ..., and Multiply's gradient
// of input k ((dy * x0) * x1) * ... over the other inputs in order.
RT_HD inline float ChainStep(float acc, float v, bool multiply) { return multiply ? acc * v : acc + v; }

// Add's fused relu (kernels::AddArrays): values that are not > 0 become +0 (NaN too);
// its gradient passes dy where the output is > 0.
RT_HD inline float AddRelu(float v) { return v > 0.0f ? v : 0.0f; }
RT_HD inline float ReluMaskGrad(float dy, float y) { return y > 0.0f ? dy : 0.0f; }

}  // namespace ringtrain::gpu::shape
