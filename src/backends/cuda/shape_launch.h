// The CUDA kernels of the shape and merge ops (backends/cuda/shape_kernels.cu): average
// pooling, global max and average pooling, zero padding, rescaling, concatenation, and
// the element-wise chains behind Add and Multiply of any number of inputs. Each function
// enqueues its work on `stream` and returns the launch's error (cudaSuccess when
// enqueued; nothing launched for an empty problem); none synchronises or allocates.
// Layouts are NHWC, as the CPU layers'.
//
// Determinism: each output element is written by one thread, and every sum runs in the
// CPU layer's order (backends/cuda/shape_math.h), so the same inputs give the same bits
// every run; no atomics.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

#include "ops/window.h"

namespace ringtrain::gpu {

// Average pooling of x[batch, g.h, g.w, g.c] -> y[batch, g.out_h, g.out_w, g.c]; padding
// cells are not counted. The backward overwrites dx[batch, g.h, g.w, g.c] with, per
// input cell, the sum of dy / count over the windows holding it, in row-major output order.
cudaError_t AvgPoolForward(const ops::Window& g, const float* x, int batch, float* y, cudaStream_t stream);
cudaError_t AvgPoolBackward(const ops::Window& g, const float* dy, int batch, float* dx, cudaStream_t stream);

// Global pooling of x[batch, pixels, channels] -> y[batch, channels]: the maximum (argmax,
// when not null, gets the winning pixel per output; ties to the first) or the mean.
cudaError_t GlobalMaxPoolForward(const float* x, int batch, int pixels, int channels, float* y, int32_t* argmax,
                                 cudaStream_t stream);
cudaError_t GlobalAvgPoolForward(const float* x, int batch, int pixels, int channels, float* y, cudaStream_t stream);
// dx[batch, pixels, channels]: dy at the winning pixel, 0 elsewhere; or dy / pixels.
cudaError_t GlobalMaxPoolBackward(const float* dy, const int32_t* argmax, int batch, int pixels, int channels,
                                  float* dx, cudaStream_t stream);
cudaError_t GlobalAvgPoolBackward(const float* dy, int batch, int pixels, int channels, float* dx, cudaStream_t stream);

// Zero padding of x[batch, in_h, in_w, c] by (top, left) into y[batch, out_h, out_w, c]
// (bottom and right are what the shapes leave); the backward crops dy back to dx.
struct PadGeometry {
  int in_h = 0, in_w = 0, c = 0;
  int out_h = 0, out_w = 0;
  int top = 0, left = 0;
};
cudaError_t ZeroPadForward(const PadGeometry& p, const float* x, int batch, float* y, cudaStream_t stream);
cudaError_t ZeroPadBackward(const PadGeometry& p, const float* dy, int batch, float* dx, cudaStream_t stream);

// y[i] = x[i] * scale[i % channels] + offset[i % channels] over n elements; the backward
// dx[i] = dy[i] * scale[i % channels]. scale and offset are device memory.
cudaError_t RescaleForward(const float* x, const float* scale, const float* offset, int64_t n, int channels, float* y,
                           cudaStream_t stream);
cudaError_t RescaleBackward(const float* dy, const float* scale, int64_t n, int channels, float* dx,
                            cudaStream_t stream);

// Concatenation, one input at a time: `rows` rows (batch times the rows before the axis)
// of `chunk` floats of input k, at `offset` within the output's rows of `row_total`
// floats. Scatter copies input -> output; gather copies the output gradient's slice ->
// the input's gradient.
cudaError_t ConcatScatter(const float* x, int64_t rows, int64_t chunk, int64_t row_total, int64_t offset, float* y,
                          cudaStream_t stream);
cudaError_t ConcatGather(const float* dy, int64_t rows, int64_t chunk, int64_t row_total, int64_t offset, float* dx,
                         cudaStream_t stream);

// out[i] = (((a[0][i] op a[1][i]) op a[2][i]) ...) op a[count - 1][i], op + or * (count >= 1:
// one array is a copy), then the relu (values not > 0 become 0) when `relu`. `a` is a host
// array of `count` device pointers. Enqueued as one launch per eight arrays, the running
// result in out (the same bits as one pass), so out may be one of a[0..8) only.
cudaError_t ElementwiseChain(const float* const* a, int count, bool multiply, bool relu, int64_t n, float* out,
                             cudaStream_t stream);

// out[i] = y[i] > 0 ? dy[i] : 0 (a fused relu's gradient). out may be dy.
cudaError_t ReluMaskGrad(const float* dy, const float* y, int64_t n, float* out, cudaStream_t stream);

}  // namespace ringtrain::gpu
