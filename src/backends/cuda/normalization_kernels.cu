// The CUDA kernels behind backends/cuda/normalization_launch.h; the arithmetic lives in
// backends/cuda/normalization_math.h. 256 threads per block, grid-stride loops with 64-bit
// indices, a grid capped at kMaxBlocks; an empty problem launches nothing.
#include "backends/cuda/normalization_launch.h"

#include <cuda_runtime.h>

#include <algorithm>

#include "backends/cuda/normalization_math.h"

namespace ringtrain::gpu {
// A namespace of its own: unity builds compile this file with the backend's other kernels.
namespace normalization_cuda {
namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 65536;

unsigned Blocks(int64_t n) { return static_cast<unsigned>(std::min((n + kThreads - 1) / kThreads, kMaxBlocks)); }

__device__ inline int64_t GlobalThread() { return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; }
__device__ inline int64_t GridStride() { return static_cast<int64_t>(gridDim.x) * blockDim.x; }

__global__ void ScalesKernel(const float* variance, int64_t kept, float epsilon, float* scale) {
  for (int64_t k = GlobalThread(); k < kept; k += GridStride()) scale[k] = normalization::Scale(variance[k], epsilon);
}

__global__ void ForwardKernel(const float* x, const float* mean, const float* scale, const int32_t* index,
                              int64_t size, int64_t kept, bool invert, int64_t n, float* y) {
  for (int64_t i = GlobalThread(); i < n; i += GridStride()) {
    const int64_t k = normalization::KeptIndex(i, size, kept, index);
    y[i] = normalization::Normalize(x[i], mean[k], scale[k], invert);
  }
}

__global__ void BackwardKernel(const float* dy, const float* scale, const int32_t* index, int64_t size, int64_t kept,
                               bool invert, int64_t n, float* dx) {
  for (int64_t i = GlobalThread(); i < n; i += GridStride()) {
    dx[i] = normalization::NormalizeGrad(dy[i], scale[normalization::KeptIndex(i, size, kept, index)], invert);
  }
}

template <typename Kernel, typename... Args>
cudaError_t Launch(int64_t n, cudaStream_t stream, Kernel kernel, Args... args) {
  if (n > 0) kernel<<<Blocks(n), kThreads, 0, stream>>>(args...);
  return cudaGetLastError();
}

}  // namespace
}  // namespace normalization_cuda

cudaError_t NormalizationScales(const float* variance, int64_t kept, float epsilon, float* scale,
                                cudaStream_t stream) {
  return normalization_cuda::Launch(kept, stream, normalization_cuda::ScalesKernel, variance, kept, epsilon, scale);
}

cudaError_t NormalizationForward(const float* x, const float* mean, const float* scale, const int32_t* index,
                                 int64_t size, int64_t kept, bool invert, int64_t n, float* y, cudaStream_t stream) {
  return normalization_cuda::Launch(n, stream, normalization_cuda::ForwardKernel, x, mean, scale, index, size, kept,
                                    invert, n, y);
}

cudaError_t NormalizationBackward(const float* dy, const float* scale, const int32_t* index, int64_t size,
                                  int64_t kept, bool invert, int64_t n, float* dx, cudaStream_t stream) {
  return normalization_cuda::Launch(n, stream, normalization_cuda::BackwardKernel, dy, scale, index, size, kept,
                                    invert, n, dx);
}

}  // namespace ringtrain::gpu
