// The per-element arithmetic of the GPU engine's kernels (backends/cuda/gpu_kernels.cu), as
// inline functions that compile for both the host and the device. The kernels call
// them on the GPU; tests/gpu/device_math_test.cc calls the same functions on the host
// and compares them with the CPU kernels, which is how a machine without a GPU checks
// the kernels' math.
//
// Every function repeats the CPU's order of operations (src/kernels/optimizer_updates.cc,
// src/kernels/portable.cc, src/nn/losses/loss.cc, src/nn/layers/activation.h) with each product and
// sum rounded on its own. Bit-identical results need the same on both sides: nvcc
// compiles the kernels with --fmad=false, and host callers must not let the compiler
// contract a*b+c into an FMA (x86-64's default target has no FMA; build with
// -ffp-contract=off when targeting one).
//
// Header-only, no CUDA dependency: include it from plain C++ as well as from .cu files.
// Everything here is a pure function of its arguments; any thread may call it.
#pragma once

#include <math.h>  // ::sqrtf, ::exp, ::log: declared __host__ __device__ by nvcc

#include <cstddef>
#include <cstdint>

#include "kernels/kernels.h"

#if defined(__CUDACC__)
#define RT_HD __host__ __device__
#else
#define RT_HD
#endif

namespace ringtrain::gpu::dm {

// ---------------------------------------------------------------- optimizer updates
// The new parameter (and slots) for one element; the CPU's statements, in its order.

// p -= g * lr
RT_HD inline float SgdParamStep(float p, float g, float lr) { return p - g * lr; }

// v = v * momentum - g * lr; p += nesterov ? v * momentum - g * lr : v.
RT_HD inline void MomentumStep(float* p, float* v, float g, float lr, float momentum, bool nesterov) {
  const float nv = *v * momentum - g * lr;
  *v = nv;
  if (nesterov) {
    *p = *p + (nv * momentum - g * lr);
  } else {
    *p = *p + nv;
  }
}

// m += (g - m) * (1 - b1); v += (g * g - v) * (1 - b2); p -= (m * alpha) / (sqrt(v) + eps).
// sqrtf is IEEE-rounded on both sides (nvcc's default -prec-sqrt=true), as is '/'
// (-prec-div=true), so the result is the CPU's bits.
RT_HD inline void AdamStep(float* p, float* m, float* v, float g, float alpha, float one_minus_b1,
                           float one_minus_b2, float eps) {
  const float nm = *m + (g - *m) * one_minus_b1;
  const float nv = *v + (g * g - *v) * one_minus_b2;
  *m = nm;
  *v = nv;
  *p = *p - (nm * alpha) / (sqrtf(nv) + eps);
}

// ---------------------------------------------------------------- activation and bias
// relu(v) as the CPU's epilogue: NaN and -0 both become +0.
RT_HD inline float Relu(float v) { return v > 0.0f ? v : 0.0f; }

// y + bias, then the activation: one element of the dense/conv forward epilogue.
RT_HD inline float BiasActivation(float y, const float* bias, int col, bool relu) {
  const float pre = bias != nullptr ? y + bias[col] : y;
  return relu ? Relu(pre) : pre;
}

// The gradient before the activation: dy where the output was positive (relu), else dy.
RT_HD inline float ActivationGrad(float dy, float y, bool relu) { return relu ? (y > 0.0f ? dy : 0.0f) : dy; }

// The bias gradient is summed per column over `lanes` contiguous row chunks, each in
// row order, and then the chunk sums in chunk order. One lane (up to kBiasGradLaneRows
// rows) is exactly the CPU's order and bits; above that (conv: rows = batch * out_h *
// out_w) a lane is kBiasGradChunkRows rows, so that a long column spreads over hundreds
// of threads. The split depends on `rows` only, so the bits never change between runs.
constexpr int64_t kBiasGradLaneRows = 4096;
constexpr int64_t kBiasGradChunkRows = 128;

RT_HD inline int64_t BiasGradLanes(int64_t rows) {
  return rows <= kBiasGradLaneRows ? 1 : (rows + kBiasGradChunkRows - 1) / kBiasGradChunkRows;
}

// Rows [*begin, *end) of chunk `lane` out of `lanes` (the last chunks may be short or empty).
RT_HD inline void BiasGradChunk(int64_t rows, int64_t lanes, int64_t lane, int64_t* begin, int64_t* end) {
  const int64_t per = (rows + lanes - 1) / lanes;
  const int64_t b = per * lane;
  const int64_t e = b + per;
  *begin = b < rows ? b : rows;
  *end = e < rows ? e : rows;
}

// Sum over rows [begin, end) of column `col` of the pre-activation gradient, in row
// order from 0.0f; writes each element to dpre when it is not null (dpre may equal dy:
// every element is read before it is written). Rows are read eight at a time before
// any is written, so that a GPU thread has eight loads in flight.
RT_HD inline float ActivationBiasChunk(const float* dy, const float* y, int64_t begin, int64_t end, int cols, int col,
                                       bool relu, float* dpre) {
  constexpr int kGroup = 8;
  float sum = 0.0f;
  int64_t r = begin;
  for (; r + kGroup <= end; r += kGroup) {
    float d[kGroup];
#ifdef __CUDA_ARCH__
#pragma unroll
#endif
    for (int k = 0; k < kGroup; ++k) {
      const int64_t i = (r + k) * cols + col;
      d[k] = ActivationGrad(dy[i], relu ? y[i] : 0.0f, relu);
    }
#ifdef __CUDA_ARCH__
#pragma unroll
#endif
    for (int k = 0; k < kGroup; ++k) {
      if (dpre != nullptr) dpre[(r + k) * cols + col] = d[k];
      sum += d[k];
    }
  }
  for (; r < end; ++r) {
    const int64_t i = r * cols + col;
    const float d = ActivationGrad(dy[i], relu ? y[i] : 0.0f, relu);
    if (dpre != nullptr) dpre[i] = d;
    sum += d;
  }
  return sum;
}

// ---------------------------------------------------------------- conv kernel layouts
// The HWIO [kh, kw, c, f] index of the element at OHWI [f, kh, kw, c] index `o`.
RT_HD inline int64_t OhwiToHwioIndex(int64_t o, int kh, int kw, int c, int f) {
  const int64_t ic = o % c;
  int64_t rest = o / c;
  const int64_t iw = rest % kw;
  rest /= kw;
  const int64_t ih = rest % kh;
  const int64_t jf = rest / kh;
  return ((ih * kw + iw) * c + ic) * f + jf;
}

// ---------------------------------------------------------------- max pooling
// The window of output row/column `o` clipped to the input: [*lo, *hi).
RT_HD inline void PoolSpan(int o, int stride, int pad, int k, int extent, int* lo, int* hi) {
  const int start = o * stride - pad;
  *lo = start > 0 ? start : 0;
  *hi = start + k < extent ? start + k : extent;
}

// The winning cell of output (oh, ow, c) within one example's NHWC input `img`: the
// maximum, ties to the first in row-major window order (a later cell wins only when
// strictly larger), cells outside the input ignored, as the CPU's scan. Writes the
// maximum to *value and returns the cell's index within the example, or -1 when the
// window's first cell is NaN: then the CPU's output is NaN, no cell compares equal to
// it, and its backward pass sends the gradient nowhere (see MaxPoolGather).
RT_HD inline int32_t MaxPoolScan(const kernels::Window& g, const float* img, int oh, int ow, int c, float* value) {
  int h0, h1, w0, w1;
  PoolSpan(oh, g.stride_h, g.pad_top, g.kh, g.h, &h0, &h1);
  PoolSpan(ow, g.stride_w, g.pad_left, g.kw, g.w, &w0, &w1);
  int32_t best = (h0 * g.w + w0) * g.c + c;
  float best_value = img[best];
  for (int ih = h0; ih < h1; ++ih) {
    for (int iw = w0; iw < w1; ++iw) {
      const int32_t cell = (ih * g.w + iw) * g.c + c;
      if (img[cell] > best_value) {
        best_value = img[cell];
        best = cell;
      }
    }
  }
  *value = best_value;
  return best_value == best_value ? best : -1;
}

// The first and one-past-last output rows (or columns) whose windows contain input row
// `i`: o * stride - pad <= i < o * stride - pad + k, within [0, out).
RT_HD inline void PoolCover(int i, int stride, int pad, int k, int out, int* lo, int* hi) {
  const int top = i + pad;                  // o * stride <= top
  const int bottom = top - k + 1;           // o * stride >= bottom
  const int first = bottom <= 0 ? 0 : (bottom + stride - 1) / stride;
  int last = top / stride + 1;              // top >= 0: pad >= 0 and i >= 0
  if (last > out) last = out;
  *lo = first;
  *hi = last > first ? last : first;
}

// dx of input cell (ih, iw, c) of one example: the sum, from 0.0f and in row-major
// output order (the CPU's order of its '+=' into dx), of the dy whose argmax is this
// cell. argmax and dy point at the example's [out_h, out_w, c] outputs.
RT_HD inline float MaxPoolGather(const kernels::Window& g, const int32_t* argmax, const float* dy, int ih, int iw,
                                 int c) {
  int oh0, oh1, ow0, ow1;
  PoolCover(ih, g.stride_h, g.pad_top, g.kh, g.out_h, &oh0, &oh1);
  PoolCover(iw, g.stride_w, g.pad_left, g.kw, g.out_w, &ow0, &ow1);
  const int32_t cell = (ih * g.w + iw) * g.c + c;
  float sum = 0.0f;
  for (int oh = oh0; oh < oh1; ++oh) {
    for (int ow = ow0; ow < ow1; ++ow) {
      const int64_t o = (static_cast<int64_t>(oh) * g.out_w + ow) * g.c + c;
      if (argmax[o] == cell) sum += dy[o];
    }
  }
  return sum;
}

// ---------------------------------------------------------------- softmax cross-entropy
// One example's softmax statistics, in double as nn::SparseSoftmaxCrossEntropy.
struct SoftmaxRow {
  int best = 0;          // the first argmax (ties to the first, like tf.argmax)
  double max = 0;        // x[best]
  double log_sum = 0;    // log(sum over classes, in class order, of exp(x - max))
};

RT_HD inline SoftmaxRow SoftmaxRowStats(const float* x, int classes) {
  SoftmaxRow r;
  for (int c = 1; c < classes; ++c) {
    if (x[c] > x[r.best]) r.best = c;
  }
  r.max = x[r.best];
  double sum = 0;
  for (int c = 0; c < classes; ++c) sum += ::exp(static_cast<double>(x[c]) - r.max);
  r.log_sum = ::log(sum);
  return r;
}

// -log softmax(x)[label], or NaN when the label is outside [0, classes) (the CPU makes
// the batch's loss NaN then; a NaN term does the same to an ordered sum).
RT_HD inline double SoftmaxXentLoss(const float* x, const SoftmaxRow& r, int32_t label, int classes) {
  if (label < 0 || label >= classes) return NAN;
  return r.log_sum - (static_cast<double>(x[label]) - r.max);
}

RT_HD inline bool SoftmaxXentCorrect(const SoftmaxRow& r, int32_t label) { return r.best == label; }

// (softmax(x)[c] - [c == label]) * grad_scale for logit value xc of class c.
RT_HD inline float SoftmaxXentGrad(float xc, int c, int32_t label, const SoftmaxRow& r, float grad_scale) {
  const double p = ::exp(static_cast<double>(xc) - r.max - r.log_sum);
  return static_cast<float>((p - (c == label ? 1.0 : 0.0)) * grad_scale);
}

}  // namespace ringtrain::gpu::dm
