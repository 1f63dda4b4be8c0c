// The CUDA kernels behind backends/cuda/noise_launch.h; the draws and arithmetic live in
// backends/cuda/noise_math.h. 256 threads per block, grid-stride loops with 64-bit
// indices, a grid capped at kMaxBlocks; an empty problem launches nothing.
#include "backends/cuda/noise_launch.h"

#include <cuda_runtime.h>

#include <algorithm>

#include "backends/cuda/noise_math.h"

namespace ringtrain::gpu {
// A namespace of its own: unity builds compile this file with the backend's other kernels.
namespace noise_cuda {
namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 65536;

unsigned Blocks(int64_t n) { return static_cast<unsigned>(std::min((n + kThreads - 1) / kThreads, kMaxBlocks)); }

__device__ inline int64_t GlobalThread() { return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; }
__device__ inline int64_t GridStride() { return static_cast<int64_t>(gridDim.x) * blockDim.x; }

__global__ void SpatialDropoutKernel(const float* x, int64_t n, int64_t size, int channels, uint64_t key, float rate,
                                     float scale, float* y) {
  for (int64_t i = GlobalThread(); i < n; i += GridStride()) {
    y[i] = x[i] * noise::ChannelMask(key, noise::ChannelMaskIndex(i, size, channels), rate, scale);
  }
}

__global__ void GaussianNoiseKernel(const float* x, int64_t n, uint64_t key, float stddev, float* y) {
  for (int64_t i = GlobalThread(); i < n; i += GridStride()) {
    y[i] = noise::AddNoise(x[i], key, static_cast<uint64_t>(i), stddev);
  }
}

}  // namespace
}  // namespace noise_cuda

cudaError_t SpatialDropoutApply(const float* x, int64_t n, int64_t size, int channels, uint64_t key, float rate,
                                float scale, float* y, cudaStream_t stream) {
  if (n > 0) {
    noise_cuda::SpatialDropoutKernel<<<noise_cuda::Blocks(n), noise_cuda::kThreads, 0, stream>>>(
        x, n, size, channels, key, rate, scale, y);
  }
  return cudaGetLastError();
}

cudaError_t GaussianNoiseForward(const float* x, int64_t n, uint64_t key, float stddev, float* y,
                                 cudaStream_t stream) {
  if (n > 0) {
    noise_cuda::GaussianNoiseKernel<<<noise_cuda::Blocks(n), noise_cuda::kThreads, 0, stream>>>(x, n, key, stddev, y);
  }
  return cudaGetLastError();
}

}  // namespace ringtrain::gpu
