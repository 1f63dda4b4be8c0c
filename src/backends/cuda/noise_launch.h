// The CUDA kernels of SpatialDropout2D and GaussianNoise (backends/cuda/noise_kernels.cu).
// Each function enqueues its work on `stream` and returns the launch's error; none
// synchronises or allocates. One thread per element; the draws are pure functions of
// (key, index) (backends/cuda/noise_math.h), so the bits do not depend on the launch.
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

namespace ringtrain::gpu {

// y = x * ChannelMask(key, ChannelMaskIndex(i), rate, scale) over n elements of examples
// of `size` floats with `channels` channels; the backward is the same with dy -> dx.
cudaError_t SpatialDropoutApply(const float* x, int64_t n, int64_t size, int channels, uint64_t key, float rate,
                                float scale, float* y, cudaStream_t stream);
// y = x + GaussianDraw(key, i) * stddev over n elements.
cudaError_t GaussianNoiseForward(const float* x, int64_t n, uint64_t key, float stddev, float* y,
                                 cudaStream_t stream);

}  // namespace ringtrain::gpu
