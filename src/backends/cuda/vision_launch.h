// The CUDA kernels of the vision ops (backends/cuda/vision_kernels.cu): resampling (the
// box of Cropping2D, UpSampling2D, Resizing and CenterCrop sampled onto the output) and
// Permute, forward and backward. Each function enqueues its work on `stream` and returns
// the launch's error (cudaSuccess when enqueued; nothing launched for an empty problem);
// none synchronises or allocates. Layouts are NHWC, as the CPU kernels'.
//
// Determinism: each output element is written by one thread, and every sum runs in the
// CPU kernel's order (backends/cuda/vision_math.h): the same bits every run; no atomics.
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

#include "backends/cuda/vision_math.h"

namespace ringtrain::gpu {

// y[batch, out_h, out_w, c] from x[batch, in_h, in_w, c]; the backward overwrites
// dx[batch, in_h, in_w, c] (zero outside the box).
cudaError_t ResampleForward(const vision::ResampleGeometry& g, const float* x, int batch, float* y,
                            cudaStream_t stream);
cudaError_t ResampleBackward(const vision::ResampleGeometry& g, const float* dy, int batch, float* dx,
                             cudaStream_t stream);

// y[batch, permuted shape] from x; the backward writes each output gradient back to its
// input cell (overwrites dx).
cudaError_t PermuteForward(const vision::PermuteGeometry& p, const float* x, int batch, float* y, cudaStream_t stream);
cudaError_t PermuteBackward(const vision::PermuteGeometry& p, const float* dy, int batch, float* dx,
                            cudaStream_t stream);

// y[batch, out_size]: each output the sum (mean) of its cells; the backward writes every
// input cell's gradient (overwrites dx).
cudaError_t ReduceForward(const vision::ReduceGeometry& g, const float* x, int batch, float* y, cudaStream_t stream);
cudaError_t ReduceBackward(const vision::ReduceGeometry& g, const float* dy, int batch, float* dx,
                           cudaStream_t stream);

}  // namespace ringtrain::gpu
