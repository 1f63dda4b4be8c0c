// The CUDA kernels behind backends/cuda/vision_launch.h: resampling, Permute and Reduce. The
// arithmetic of every element lives in backends/cuda/vision_math.h (tested on the host
// against the CPU kernels); this file only maps threads onto elements.
//
// Conventions (as shape_kernels.cu): 256 threads per block; grid-stride loops with 64-bit
// indices; a grid capped at kMaxBlocks; an empty problem launches nothing. Each output
// element is written by one thread: no atomics.
#include "backends/cuda/vision_launch.h"

#include <cuda_runtime.h>

#include <algorithm>

namespace ringtrain::gpu {
// A namespace of its own: unity builds may compile this file with the other kernels.
namespace vision_cuda {
namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 65536;

unsigned Blocks(int64_t n) { return static_cast<unsigned>(std::min((n + kThreads - 1) / kThreads, kMaxBlocks)); }

__device__ inline int64_t GlobalThread() { return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; }
__device__ inline int64_t GridStride() { return static_cast<int64_t>(gridDim.x) * blockDim.x; }

// One thread per output element.
__global__ void ResampleForwardKernel(vision::ResampleGeometry g, const float* x, int64_t n, float* y) {
  const int64_t in_size = static_cast<int64_t>(g.in_h) * g.in_w * g.c;
  for (int64_t i = GlobalThread(); i < n; i += GridStride()) {
    const int k = static_cast<int>(i % g.c);
    int64_t rest = i / g.c;
    const int ox = static_cast<int>(rest % g.out_w);
    rest /= g.out_w;
    const int oy = static_cast<int>(rest % g.out_h);
    const int64_t example = rest / g.out_h;
    y[i] = vision::ResampleValue(g, x + example * in_size, oy, ox, k);
  }
}

// One thread per input element gathers the gradient of the outputs that read it.
__global__ void ResampleBackwardKernel(vision::ResampleGeometry g, const float* dy, int64_t n, float* dx) {
  const int64_t out_size = static_cast<int64_t>(g.out_h) * g.out_w * g.c;
  for (int64_t i = GlobalThread(); i < n; i += GridStride()) {
    const int k = static_cast<int>(i % g.c);
    int64_t rest = i / g.c;
    const int ix = static_cast<int>(rest % g.in_w);
    rest /= g.in_w;
    const int iy = static_cast<int>(rest % g.in_h);
    const int64_t example = rest / g.in_h;
    dx[i] = vision::ResampleGrad(g, dy + example * out_size, iy, ix, k);
  }
}

// One thread per output element, forward and backward (a bijection).
__global__ void PermuteForwardKernel(vision::PermuteGeometry p, const float* x, int64_t n, float* y) {
  for (int64_t i = GlobalThread(); i < n; i += GridStride()) {
    const int64_t example = i / p.size;
    y[i] = x[example * p.size + vision::PermuteSource(p, i % p.size)];
  }
}

__global__ void PermuteBackwardKernel(vision::PermuteGeometry p, const float* dy, int64_t n, float* dx) {
  for (int64_t i = GlobalThread(); i < n; i += GridStride()) {
    const int64_t example = i / p.size;
    dx[example * p.size + vision::PermuteSource(p, i % p.size)] = dy[i];
  }
}

// One thread per output value, its cells summed in order: no atomics, the same bits every run.
__global__ void ReduceForwardKernel(vision::ReduceGeometry g, const float* x, int64_t n, float* y) {
  for (int64_t i = GlobalThread(); i < n; i += GridStride()) {
    const int64_t example = i / g.out_size;
    y[i] = vision::ReduceValue(g, x + example * g.in_size, i % g.out_size);
  }
}

// One thread per output value, writing its cells (each input cell belongs to one output).
__global__ void ReduceBackwardKernel(vision::ReduceGeometry g, const float* dy, int64_t n, float* dx) {
  for (int64_t i = GlobalThread(); i < n; i += GridStride()) {
    const int64_t example = i / g.out_size;
    float* cell = dx + example * g.in_size + vision::ReduceBase(g, i % g.out_size);
    const float grad = vision::ReduceGradient(g, dy[i]);
    for (int64_t k = 0; k < g.count; ++k) cell[vision::ReduceOffset(g, k)] = grad;
  }
}

template <typename Kernel, typename... Args>
cudaError_t Launch(int64_t n, cudaStream_t stream, Kernel kernel, Args... args) {
  if (n > 0) kernel<<<Blocks(n), kThreads, 0, stream>>>(args...);
  return cudaGetLastError();
}

}  // namespace
}  // namespace vision_cuda

cudaError_t ResampleForward(const vision::ResampleGeometry& g, const float* x, int batch, float* y,
                            cudaStream_t stream) {
  const int64_t n = static_cast<int64_t>(batch) * g.out_h * g.out_w * g.c;
  return vision_cuda::Launch(n, stream, vision_cuda::ResampleForwardKernel, g, x, n, y);
}

cudaError_t ResampleBackward(const vision::ResampleGeometry& g, const float* dy, int batch, float* dx,
                             cudaStream_t stream) {
  const int64_t n = static_cast<int64_t>(batch) * g.in_h * g.in_w * g.c;
  return vision_cuda::Launch(n, stream, vision_cuda::ResampleBackwardKernel, g, dy, n, dx);
}

cudaError_t PermuteForward(const vision::PermuteGeometry& p, const float* x, int batch, float* y,
                           cudaStream_t stream) {
  const int64_t n = static_cast<int64_t>(batch) * p.size;
  return vision_cuda::Launch(n, stream, vision_cuda::PermuteForwardKernel, p, x, n, y);
}

cudaError_t PermuteBackward(const vision::PermuteGeometry& p, const float* dy, int batch, float* dx,
                            cudaStream_t stream) {
  const int64_t n = static_cast<int64_t>(batch) * p.size;
  return vision_cuda::Launch(n, stream, vision_cuda::PermuteBackwardKernel, p, dy, n, dx);
}

cudaError_t ReduceForward(const vision::ReduceGeometry& g, const float* x, int batch, float* y, cudaStream_t stream) {
  const int64_t n = static_cast<int64_t>(batch) * g.out_size;
  return vision_cuda::Launch(n, stream, vision_cuda::ReduceForwardKernel, g, x, n, y);
}

cudaError_t ReduceBackward(const vision::ReduceGeometry& g, const float* dy, int batch, float* dx,
                           cudaStream_t stream) {
  const int64_t n = static_cast<int64_t>(batch) * g.out_size;
  return vision_cuda::Launch(n, stream, vision_cuda::ReduceBackwardKernel, g, dy, n, dx);
}

}  // namespace ringtrain::gpu
