// The CUDA kernels of Subtract, Average, Maximum and Minimum (backends/cuda/merge_kernels.cu).
// Each function enqueues its work on `stream` and returns the launch's error
// (cudaSuccess when enqueued; nothing launched for an empty problem); none synchronises
// or allocates.
//
// Determinism: each output element is written by one thread in the CPU kernel's order
// (backends/cuda/merge_math.h); no atomics.
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

namespace ringtrain::gpu {

// y[i] = a[i] - b[i].
cudaError_t SubtractForward(const float* a, const float* b, int64_t n, float* y, cudaStream_t stream);
// dx[i] = -dy[i].
cudaError_t NegateArray(const float* dy, int64_t n, float* dx, cudaStream_t stream);
// out[i] = x[i] / count (x may be out).
cudaError_t DivideByCount(const float* x, int count, int64_t n, float* out, cudaStream_t stream);

// Maximum (max true) or Minimum of `count` arrays (`a`: a host array of device
// pointers): y[i] the extreme, winner[i] the first input holding it. Enqueued as one
// launch per eight arrays, each continuing from y and winner.
cudaError_t ExtremeForward(const float* const* a, int count, bool max, int64_t n, float* y, int32_t* winner,
                           cudaStream_t stream);
// dx[i] = dy[i] where winner[i] == k, else 0.
cudaError_t ExtremeBackward(const float* dy, const int32_t* winner, int32_t k, int64_t n, float* dx,
                            cudaStream_t stream);

}  // namespace ringtrain::gpu
