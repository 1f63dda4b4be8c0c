// The CUDA kernels of RandomBrightness and RandomContrast (backends/cuda/image_adjust_kernels.cu)
// over NHWC batches of [h, w, c] images. Each function enqueues its work on `stream` and
// returns the launch's error; none synchronises or allocates. One thread per output
// value; every sum in the CPU kernel's order; no atomics.
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

#include "backends/cuda/random_math.h"

namespace ringtrain::gpu {

struct AdjustGeometry {
  int h = 0, w = 0, c = 0;
  bool contrast = false;
  float value_lo = 0, value_hi = 255;
};

// factors[b] = adjust::Factor(step, key, b, lo, hi) for b < batch.
cudaError_t AdjustFactors(rm::StepKey step, uint64_t key, double lo, double hi, int batch, float* factors,
                          cudaStream_t stream);
// Contrast only: means[b * c + ch], the example's channel means (adjust::ChannelMean).
cudaError_t AdjustChannelMeans(const AdjustGeometry& g, const float* x, int batch, float* means, cudaStream_t stream);
// t (before the clip) and y = Clip(t); `means` is ignored for brightness.
cudaError_t AdjustForward(const AdjustGeometry& g, const float* x, const float* factors, const float* means,
                          int batch, float* t, float* y, cudaStream_t stream);
// dx = ClipGrad(dy, t); for contrast then, per example and channel, the sums of those
// (into `sums`, batch * c floats) and dx = ContrastGrad(dx, sum, factor).
cudaError_t AdjustBackward(const AdjustGeometry& g, const float* dy, const float* t, const float* factors, int batch,
                           float* sums, float* dx, cudaStream_t stream);

}  // namespace ringtrain::gpu
