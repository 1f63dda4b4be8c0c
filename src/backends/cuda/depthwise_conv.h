// The GPU's depthwise convolution (Keras DepthwiseConv2D, and SeparableConv2D's first
// pass) as direct CUDA kernels over the model's layouts: NHWC x [batch, h, w, c], kernel
// [kh, kw, c, m] as the model stores it (no layout copy), output [batch, out_h, out_w,
// c * m] with channel c * m + k from input channel c. Dilation is honoured. The
// arithmetic of every element is backends/cuda/depthwise_math.h (the CPU's order,
// unit-tested on the host); bias and activation are the caller's epilogue.
//
// Each function enqueues its work on `stream` and returns cudaGetLastError() after its
// launches (cudaSuccess when enqueued); none synchronises or allocates. No atomics:
// every element is written by one thread, and every sum runs in an order fixed by the
// shape, so the same inputs give the same bits every run.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

#include "ops/window.h"

namespace ringtrain::gpu {

// y[n, oh, ow, c * m + k] = sum over the taps inside the input of x * w[:, :, c, k]
// (overwrites; no bias, no activation).
cudaError_t DepthwiseConvForward(const ops::Window& g, int multiplier, const float* x, int batch, const float* w,
                                 float* y, cudaStream_t stream);

// dw[kh, kw, c, m] = sum over the batch's output pixels of x-tap * d, where d is the
// gradient before the activation [batch, out_h, out_w, c * m] (overwrites). `partial`
// holds DepthwiseFilterGradScratchFloats(g, multiplier, batch) floats (none up to
// 4,096 output pixels, where the sum runs in one pass in the CPU's order).
cudaError_t DepthwiseConvFilterGrad(const ops::Window& g, int multiplier, const float* x, const float* d, int batch,
                                    float* dw, float* partial, cudaStream_t stream);
size_t DepthwiseFilterGradScratchFloats(const ops::Window& g, int multiplier, int batch);

// dx[batch, h, w, c] = the adjoint of the forward applied to d (overwrites).
cudaError_t DepthwiseConvInputGrad(const ops::Window& g, int multiplier, const float* d, const float* w, int batch,
                                   float* dx, cudaStream_t stream);

}  // namespace ringtrain::gpu
