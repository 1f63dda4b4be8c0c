// The CUDA kernels behind backends/cuda/image_adjust_launch.h; the arithmetic lives in
// backends/cuda/image_adjust_math.h. 256 threads per block, grid-stride loops with
// 64-bit indices, a grid capped at kMaxBlocks; an empty problem launches nothing.
#include "backends/cuda/image_adjust_launch.h"

#include <cuda_runtime.h>

#include <algorithm>

#include "backends/cuda/image_adjust_math.h"

namespace ringtrain::gpu {
// A namespace of its own: unity builds compile this file with the backend's other kernels.
namespace adjust_cuda {
namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 65536;

unsigned Blocks(int64_t n) { return static_cast<unsigned>(std::min((n + kThreads - 1) / kThreads, kMaxBlocks)); }

__device__ inline int64_t GlobalThread() { return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; }
__device__ inline int64_t GridStride() { return static_cast<int64_t>(gridDim.x) * blockDim.x; }

__global__ void FactorsKernel(rm::StepKey step, uint64_t key, double lo, double hi, int batch, float* factors) {
  for (int64_t b = GlobalThread(); b < batch; b += GridStride()) factors[b] = adjust::Factor(step, key, b, lo, hi);
}

__global__ void MeansKernel(AdjustGeometry g, const float* x, int64_t n, float* means) {
  const int64_t size = static_cast<int64_t>(g.h) * g.w * g.c;
  for (int64_t k = GlobalThread(); k < n; k += GridStride()) {
    const int64_t b = k / g.c;
    means[k] = adjust::ChannelMean(x + b * size, g.h, g.w, g.c, static_cast<int>(k % g.c));
  }
}

__global__ void ForwardKernel(AdjustGeometry g, const float* x, const float* factors, const float* means, int64_t n,
                              float* t, float* y) {
  const int64_t size = static_cast<int64_t>(g.h) * g.w * g.c;
  for (int64_t i = GlobalThread(); i < n; i += GridStride()) {
    const int64_t b = i / size;
    const float f = factors[b];
    const float v = g.contrast ? adjust::Contrast(x[i], means[b * g.c + i % g.c], f)
                               : adjust::Brighten(x[i], f, g.value_lo, g.value_hi);
    t[i] = v;
    y[i] = adjust::Clip(v, g.value_lo, g.value_hi);
  }
}

__global__ void ClipGradKernel(AdjustGeometry g, const float* dy, const float* t, int64_t n, float* dx) {
  for (int64_t i = GlobalThread(); i < n; i += GridStride()) dx[i] = adjust::ClipGrad(dy[i], t[i], g.value_lo, g.value_hi);
}

// Per example and channel: the sum of the clipped gradients in pixel order.
__global__ void SumsKernel(AdjustGeometry g, const float* dx, int64_t n, float* sums) {
  const int64_t size = static_cast<int64_t>(g.h) * g.w * g.c;
  const int64_t pixels = static_cast<int64_t>(g.h) * g.w;
  for (int64_t k = GlobalThread(); k < n; k += GridStride()) {
    const float* e = dx + (k / g.c) * size + k % g.c;
    float s = 0.0f;
    for (int64_t p = 0; p < pixels; ++p) s += e[p * g.c];
    sums[k] = s;
  }
}

__global__ void ContrastGradKernel(AdjustGeometry g, const float* factors, const float* sums, int64_t n, float* dx) {
  const int64_t size = static_cast<int64_t>(g.h) * g.w * g.c;
  for (int64_t i = GlobalThread(); i < n; i += GridStride()) {
    const int64_t b = i / size;
    dx[i] = adjust::ContrastGrad(dx[i], sums[b * g.c + i % g.c], factors[b], g.h, g.w);
  }
}

template <typename Kernel, typename... Args>
cudaError_t Launch(int64_t n, cudaStream_t stream, Kernel kernel, Args... args) {
  if (n > 0) kernel<<<Blocks(n), kThreads, 0, stream>>>(args...);
  return cudaGetLastError();
}

}  // namespace
}  // namespace adjust_cuda

cudaError_t AdjustFactors(rm::StepKey step, uint64_t key, double lo, double hi, int batch, float* factors,
                          cudaStream_t stream) {
  return adjust_cuda::Launch(batch, stream, adjust_cuda::FactorsKernel, step, key, lo, hi, batch, factors);
}

cudaError_t AdjustChannelMeans(const AdjustGeometry& g, const float* x, int batch, float* means, cudaStream_t stream) {
  const int64_t n = static_cast<int64_t>(batch) * g.c;
  return adjust_cuda::Launch(n, stream, adjust_cuda::MeansKernel, g, x, n, means);
}

cudaError_t AdjustForward(const AdjustGeometry& g, const float* x, const float* factors, const float* means,
                          int batch, float* t, float* y, cudaStream_t stream) {
  const int64_t n = static_cast<int64_t>(batch) * g.h * g.w * g.c;
  return adjust_cuda::Launch(n, stream, adjust_cuda::ForwardKernel, g, x, factors, means, n, t, y);
}

cudaError_t AdjustBackward(const AdjustGeometry& g, const float* dy, const float* t, const float* factors, int batch,
                           float* sums, float* dx, cudaStream_t stream) {
  const int64_t n = static_cast<int64_t>(batch) * g.h * g.w * g.c;
  cudaError_t e = adjust_cuda::Launch(n, stream, adjust_cuda::ClipGradKernel, g, dy, t, n, dx);
  if (e != cudaSuccess || !g.contrast) return e;
  const int64_t channels = static_cast<int64_t>(batch) * g.c;
  e = adjust_cuda::Launch(channels, stream, adjust_cuda::SumsKernel, g, dx, channels, sums);
  if (e != cudaSuccess) return e;
  return adjust_cuda::Launch(n, stream, adjust_cuda::ContrastGradKernel, g, factors, sums, n, dx);
}

}  // namespace ringtrain::gpu
