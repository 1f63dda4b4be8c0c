// The CUDA kernels of Normalization (backends/cuda/normalization_kernels.cu). Each
// function enqueues its work on `stream` and returns the launch's error; none
// synchronises or allocates. One thread per output element; no atomics.
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

namespace ringtrain::gpu {

// scale[k] = max(sqrt(variance[k]), epsilon) for k < kept.
cudaError_t NormalizationScales(const float* variance, int64_t kept, float epsilon, float* scale,
                                cudaStream_t stream);
// Over n elements of examples of `size`: y = Normalize(x, mean[k], scale[k]) with k the
// element's kept index (index: a device table of `size` entries, or null for j % kept).
cudaError_t NormalizationForward(const float* x, const float* mean, const float* scale, const int32_t* index,
                                 int64_t size, int64_t kept, bool invert, int64_t n, float* y, cudaStream_t stream);
// dx = NormalizeGrad(dy, scale[k]).
cudaError_t NormalizationBackward(const float* dy, const float* scale, const int32_t* index, int64_t size,
                                  int64_t kept, bool invert, int64_t n, float* dx, cudaStream_t stream);

}  // namespace ringtrain::gpu
