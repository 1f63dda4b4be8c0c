// The CUDA kernels behind backends/cuda/merge_launch.h: Subtract, Average's division,
// and the Maximum / Minimum chains. The arithmetic of every element lives in
// backends/cuda/merge_math.h (unit-tested on the host against the CPU kernels); this file
// only maps threads onto elements: 256 threads per block, grid-stride loops with 64-bit
// indices, a grid capped at kMaxBlocks, an empty problem launches nothing.
#include "backends/cuda/merge_launch.h"

#include <cuda_runtime.h>

#include <algorithm>

#include "backends/cuda/merge_math.h"

namespace ringtrain::gpu {
// A namespace of its own: unity builds compile this file with the backend's other kernels.
namespace merge_cuda {
namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 65536;

unsigned Blocks(int64_t n) { return static_cast<unsigned>(std::min((n + kThreads - 1) / kThreads, kMaxBlocks)); }

__device__ inline int64_t GlobalThread() { return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; }
__device__ inline int64_t GridStride() { return static_cast<int64_t>(gridDim.x) * blockDim.x; }

__global__ void SubtractKernel(const float* a, const float* b, int64_t n, float* y) {
  for (int64_t i = GlobalThread(); i < n; i += GridStride()) y[i] = merge::Subtract(a[i], b[i]);
}

__global__ void NegateKernel(const float* dy, int64_t n, float* dx) {
  for (int64_t i = GlobalThread(); i < n; i += GridStride()) dx[i] = merge::Negate(dy[i]);
}

__global__ void DivideKernel(const float* x, int count, int64_t n, float* out) {
  for (int64_t i = GlobalThread(); i < n; i += GridStride()) out[i] = merge::DivideByCount(x[i], count);
}

// Up to kChainArrays device pointers passed by value with the launch; `first` is the
// input index of a[0] (or of a[1] when the launch continues from y).
constexpr int kChainArrays = 8;
struct ChainArrays {
  const float* a[kChainArrays];
  int count;
  int first;       // the input index of the first new array
  bool continues;  // a[0] is the running extreme y (winner holds its input)
};

__global__ void ExtremeKernel(ChainArrays arrays, bool max, int64_t n, float* y, int32_t* winner) {
  for (int64_t i = GlobalThread(); i < n; i += GridStride()) {
    float best = arrays.a[0][i];
    int32_t at = arrays.continues ? winner[i] : arrays.first;
    const int32_t base = arrays.continues ? arrays.first - 1 : arrays.first;
#pragma unroll
    for (int k = 1; k < kChainArrays; ++k) {
      if (k < arrays.count) {
        merge::ExtremeStep(arrays.a[k][i], base + k, max, &best, &at);
      }
    }
    y[i] = best;
    winner[i] = at;
  }
}

__global__ void ExtremeGradKernel(const float* dy, const int32_t* winner, int32_t k, int64_t n, float* dx) {
  for (int64_t i = GlobalThread(); i < n; i += GridStride()) dx[i] = merge::ExtremeGrad(dy[i], winner[i], k);
}

template <typename Kernel, typename... Args>
cudaError_t Launch(int64_t n, cudaStream_t stream, Kernel kernel, Args... args) {
  if (n > 0) kernel<<<Blocks(n), kThreads, 0, stream>>>(args...);
  return cudaGetLastError();
}

}  // namespace
}  // namespace merge_cuda

cudaError_t SubtractForward(const float* a, const float* b, int64_t n, float* y, cudaStream_t stream) {
  return merge_cuda::Launch(n, stream, merge_cuda::SubtractKernel, a, b, n, y);
}

cudaError_t NegateArray(const float* dy, int64_t n, float* dx, cudaStream_t stream) {
  return merge_cuda::Launch(n, stream, merge_cuda::NegateKernel, dy, n, dx);
}

cudaError_t DivideByCount(const float* x, int count, int64_t n, float* out, cudaStream_t stream) {
  return merge_cuda::Launch(n, stream, merge_cuda::DivideKernel, x, count, n, out);
}

cudaError_t ExtremeForward(const float* const* a, int count, bool max, int64_t n, float* y, int32_t* winner,
                           cudaStream_t stream) {
  if (n <= 0 || count < 1) return cudaGetLastError();
  int next = 0;
  while (next < count) {
    merge_cuda::ChainArrays arrays{};
    arrays.count = 0;
    arrays.continues = next > 0;
    arrays.first = next;
    if (arrays.continues) arrays.a[arrays.count++] = y;
    while (arrays.count < merge_cuda::kChainArrays && next < count) arrays.a[arrays.count++] = a[next++];
    const cudaError_t e = merge_cuda::Launch(n, stream, merge_cuda::ExtremeKernel, arrays, max, n, y, winner);
    if (e != cudaSuccess) return e;
  }
  return cudaSuccess;
}

cudaError_t ExtremeBackward(const float* dy, const int32_t* winner, int32_t k, int64_t n, float* dx,
                            cudaStream_t stream) {
  return merge_cuda::Launch(n, stream, merge_cuda::ExtremeGradKernel, dy, winner, k, n, dx);
}

}  // namespace ringtrain::gpu
