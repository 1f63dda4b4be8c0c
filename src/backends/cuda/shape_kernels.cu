// The CUDA kernels behind backends/cuda/shape_launch.h: average and global pooling, zero
// padding, rescaling, concatenation and the Add / Multiply chains. The arithmetic of
// every element lives in backends/cuda/shape_math.h (unit-tested on the host against the
// CPU layers); this file only maps threads onto elements.
//
// Conventions (as gpu_kernels.cu): 256 threads per block; grid-stride loops with 64-bit
// indices; a grid capped at kMaxBlocks; an empty problem launches nothing. Each output
// element is written by one thread and every sum runs in an order fixed by the shape:
// no atomics. Each entry point returns cudaGetLastError() after its launches.
#include "backends/cuda/shape_launch.h"

#include <cuda_runtime.h>

#include <algorithm>

#include "backends/cuda/shape_math.h"

namespace ringtrain::gpu {
// A namespace of its own: unity builds compile this file with gpu_kernels.cu.
namespace shape_cuda {
namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 65536;

unsigned Blocks(int64_t n) { return static_cast<unsigned>(std::min((n + kThreads - 1) / kThreads, kMaxBlocks)); }

__device__ inline int64_t GlobalThread() { return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; }
__device__ inline int64_t GridStride() { return static_cast<int64_t>(gridDim.x) * blockDim.x; }

// ---------------------------------------------------------------- average pooling
// ops::Window is trivially copyable and passed by value; only its fields are read here.

// One thread per output element.
__global__ void AvgPoolForwardKernel(ops::Window g, const float* x, int64_t n, float* y) {
  const int64_t in_size = static_cast<int64_t>(g.h) * g.w * g.c;
  for (int64_t i = GlobalThread(); i < n; i += GridStride()) {
    const shape::Nhwc o = shape::SplitNhwc(i, g.out_h, g.out_w, g.c);
    y[i] = shape::AvgPoolValue(g, x + o.n * in_size, o.h, o.w, o.c);
  }
}

// One thread per input cell gathers dy / count of the windows holding it.
__global__ void AvgPoolBackwardKernel(ops::Window g, const float* dy, int64_t n, float* dx) {
  const int64_t out_size = static_cast<int64_t>(g.out_h) * g.out_w * g.c;
  for (int64_t i = GlobalThread(); i < n; i += GridStride()) {
    const shape::Nhwc at = shape::SplitNhwc(i, g.h, g.w, g.c);
    dx[i] = shape::AvgPoolGather(g, dy + at.n * out_size, at.h, at.w, at.c);
  }
}

// ---------------------------------------------------------------- global pooling
// One thread per (example, channel) walks the pixels in order; neighbouring threads
// read neighbouring channels.

__global__ void GlobalMaxPoolForwardKernel(const float* x, int64_t n, int pixels, int channels, float* y,
                                           int32_t* argmax) {
  const int64_t per_example = static_cast<int64_t>(pixels) * channels;
  for (int64_t i = GlobalThread(); i < n; i += GridStride()) {
    const int64_t example = i / channels;
    const int c = static_cast<int>(i % channels);
    int32_t arg;
    y[i] = shape::GlobalMaxValue(x + example * per_example, pixels, channels, c, &arg);
    if (argmax != nullptr) argmax[i] = arg;
  }
}

__global__ void GlobalAvgPoolForwardKernel(const float* x, int64_t n, int pixels, int channels, float* y) {
  const int64_t per_example = static_cast<int64_t>(pixels) * channels;
  for (int64_t i = GlobalThread(); i < n; i += GridStride()) {
    const int64_t example = i / channels;
    const int c = static_cast<int>(i % channels);
    y[i] = shape::GlobalAvgValue(x + example * per_example, pixels, channels, c);
  }
}

// One thread per input element.
__global__ void GlobalMaxPoolBackwardKernel(const float* dy, const int32_t* argmax, int64_t n, int pixels, int channels,
                                            float* dx) {
  const int64_t per_example = static_cast<int64_t>(pixels) * channels;
  for (int64_t i = GlobalThread(); i < n; i += GridStride()) {
    const int64_t example = i / per_example;
    const int64_t rest = i % per_example;
    const int p = static_cast<int>(rest / channels);
    const int64_t o = example * channels + rest % channels;
    dx[i] = shape::GlobalMaxGrad(dy[o], argmax[o], p);
  }
}

__global__ void GlobalAvgPoolBackwardKernel(const float* dy, int64_t n, int pixels, int channels, float* dx) {
  const int64_t per_example = static_cast<int64_t>(pixels) * channels;
  for (int64_t i = GlobalThread(); i < n; i += GridStride()) {
    const int64_t example = i / per_example;
    const int64_t o = example * channels + (i % per_example) % channels;
    dx[i] = shape::GlobalAvgGrad(dy[o], pixels);
  }
}

// ---------------------------------------------------------------- zero padding

// One thread per output element: the input cell, or 0 in the padding.
__global__ void ZeroPadForwardKernel(PadGeometry p, const float* x, int64_t n, float* y) {
  const int64_t in_size = static_cast<int64_t>(p.in_h) * p.in_w * p.c;
  for (int64_t i = GlobalThread(); i < n; i += GridStride()) {
    const shape::Nhwc o = shape::SplitNhwc(i, p.out_h, p.out_w, p.c);
    int ih, iw;
    const bool inside = shape::ZeroPadSource(o.h, o.w, p.top, p.left, p.in_h, p.in_w, &ih, &iw);
    y[i] = inside ? x[o.n * in_size + (static_cast<int64_t>(ih) * p.in_w + iw) * p.c + o.c] : 0.0f;
  }
}

// One thread per input element: the output gradient of its padded position.
__global__ void ZeroPadBackwardKernel(PadGeometry p, const float* dy, int64_t n, float* dx) {
  const int64_t out_size = static_cast<int64_t>(p.out_h) * p.out_w * p.c;
  for (int64_t i = GlobalThread(); i < n; i += GridStride()) {
    const shape::Nhwc at = shape::SplitNhwc(i, p.in_h, p.in_w, p.c);
    const int64_t oh = at.h + p.top, ow = at.w + p.left;
    dx[i] = dy[at.n * out_size + (oh * p.out_w + ow) * p.c + at.c];
  }
}

// ---------------------------------------------------------------- rescaling

__global__ void RescaleForwardKernel(const float* x, const float* scale, const float* offset, int64_t n, int channels,
                                     float* y) {
  for (int64_t i = GlobalThread(); i < n; i += GridStride()) {
    const int c = static_cast<int>(i % channels);
    y[i] = shape::Rescale(x[i], scale[c], offset[c]);
  }
}

__global__ void RescaleBackwardKernel(const float* dy, const float* scale, int64_t n, int channels, float* dx) {
  for (int64_t i = GlobalThread(); i < n; i += GridStride()) dx[i] = shape::RescaleGrad(dy[i], scale[i % channels]);
}

// ---------------------------------------------------------------- concatenation
// One thread per element of the input's [rows, chunk].

__global__ void ConcatScatterKernel(const float* x, int64_t n, int64_t chunk, int64_t row_total, int64_t offset,
                                    float* y) {
  for (int64_t i = GlobalThread(); i < n; i += GridStride()) {
    y[shape::ConcatOutputIndex(i / chunk, i % chunk, row_total, offset)] = x[i];
  }
}

__global__ void ConcatGatherKernel(const float* dy, int64_t n, int64_t chunk, int64_t row_total, int64_t offset,
                                   float* dx) {
  for (int64_t i = GlobalThread(); i < n; i += GridStride()) {
    dx[i] = dy[shape::ConcatOutputIndex(i / chunk, i % chunk, row_total, offset)];
  }
}

// ---------------------------------------------------------------- Add and Multiply chains
// Up to kChainArrays device pointers passed by value with the launch.
constexpr int kChainArrays = 8;
struct ChainArrays {
  const float* a[kChainArrays];
  int count;
};

// out[i] = the chain over a[0..count) at i (each thread reads all its inputs at i before
// writing out[i], so out may be one of them).
__global__ void ChainKernel(ChainArrays arrays, bool multiply, bool relu, int64_t n, float* out) {
  for (int64_t i = GlobalThread(); i < n; i += GridStride()) {
    float acc = arrays.a[0][i];
    // Unrolled with constant indices: the pointers stay in parameter space.
#pragma unroll
    for (int k = 1; k < kChainArrays; ++k) {
      if (k < arrays.count) acc = shape::ChainStep(acc, arrays.a[k][i], multiply);
    }
    out[i] = relu ? shape::AddRelu(acc) : acc;
  }
}

__global__ void ReluMaskGradKernel(const float* dy, const float* y, int64_t n, float* out) {
  for (int64_t i = GlobalThread(); i < n; i += GridStride()) out[i] = shape::ReluMaskGrad(dy[i], y[i]);
}

// Launches `kernel` over n elements (nothing for an empty problem) and returns the launch's error.
template <typename Kernel, typename... Args>
cudaError_t Launch(int64_t n, cudaStream_t stream, Kernel kernel, Args... args) {
  if (n > 0) kernel<<<Blocks(n), kThreads, 0, stream>>>(args...);
  return cudaGetLastError();
}

}  // namespace
}  // namespace shape_cuda

cudaError_t AvgPoolForward(const ops::Window& g, const float* x, int batch, float* y, cudaStream_t stream) {
  const int64_t n = static_cast<int64_t>(batch) * g.out_h * g.out_w * g.c;
  return shape_cuda::Launch(n, stream, shape_cuda::AvgPoolForwardKernel, g, x, n, y);
}

cudaError_t AvgPoolBackward(const ops::Window& g, const float* dy, int batch, float* dx, cudaStream_t stream) {
  const int64_t n = static_cast<int64_t>(batch) * g.h * g.w * g.c;
  return shape_cuda::Launch(n, stream, shape_cuda::AvgPoolBackwardKernel, g, dy, n, dx);
}

cudaError_t GlobalMaxPoolForward(const float* x, int batch, int pixels, int channels, float* y, int32_t* argmax,
                                 cudaStream_t stream) {
  const int64_t n = pixels > 0 ? static_cast<int64_t>(batch) * channels : 0;
  return shape_cuda::Launch(n, stream, shape_cuda::GlobalMaxPoolForwardKernel, x, n, pixels, channels, y, argmax);
}

cudaError_t GlobalAvgPoolForward(const float* x, int batch, int pixels, int channels, float* y, cudaStream_t stream) {
  const int64_t n = pixels > 0 ? static_cast<int64_t>(batch) * channels : 0;
  return shape_cuda::Launch(n, stream, shape_cuda::GlobalAvgPoolForwardKernel, x, n, pixels, channels, y);
}

cudaError_t GlobalMaxPoolBackward(const float* dy, const int32_t* argmax, int batch, int pixels, int channels,
                                  float* dx, cudaStream_t stream) {
  const int64_t n = static_cast<int64_t>(batch) * pixels * channels;
  return shape_cuda::Launch(n, stream, shape_cuda::GlobalMaxPoolBackwardKernel, dy, argmax, n, pixels, channels, dx);
}

cudaError_t GlobalAvgPoolBackward(const float* dy, int batch, int pixels, int channels, float* dx,
                                  cudaStream_t stream) {
  const int64_t n = static_cast<int64_t>(batch) * pixels * channels;
  return shape_cuda::Launch(n, stream, shape_cuda::GlobalAvgPoolBackwardKernel, dy, n, pixels, channels, dx);
}

cudaError_t ZeroPadForward(const PadGeometry& p, const float* x, int batch, float* y, cudaStream_t stream) {
  const int64_t n = static_cast<int64_t>(batch) * p.out_h * p.out_w * p.c;
  return shape_cuda::Launch(n, stream, shape_cuda::ZeroPadForwardKernel, p, x, n, y);
}

cudaError_t ZeroPadBackward(const PadGeometry& p, const float* dy, int batch, float* dx, cudaStream_t stream) {
  const int64_t n = static_cast<int64_t>(batch) * p.in_h * p.in_w * p.c;
  return shape_cuda::Launch(n, stream, shape_cuda::ZeroPadBackwardKernel, p, dy, n, dx);
}

cudaError_t RescaleForward(const float* x, const float* scale, const float* offset, int64_t n, int channels, float* y,
                           cudaStream_t stream) {
  return shape_cuda::Launch(n, stream, shape_cuda::RescaleForwardKernel, x, scale, offset, n, channels, y);
}

cudaError_t RescaleBackward(const float* dy, const float* scale, int64_t n, int channels, float* dx,
                            cudaStream_t stream) {
  return shape_cuda::Launch(n, stream, shape_cuda::RescaleBackwardKernel, dy, scale, n, channels, dx);
}

cudaError_t ConcatScatter(const float* x, int64_t rows, int64_t chunk, int64_t row_total, int64_t offset, float* y,
                          cudaStream_t stream) {
  const int64_t n = rows * chunk;
  return shape_cuda::Launch(n, stream, shape_cuda::ConcatScatterKernel, x, n, chunk, row_total, offset, y);
}

cudaError_t ConcatGather(const float* dy, int64_t rows, int64_t chunk, int64_t row_total, int64_t offset, float* dx,
                         cudaStream_t stream) {
  const int64_t n = rows * chunk;
  return shape_cuda::Launch(n, stream, shape_cuda::ConcatGatherKernel, dy, n, chunk, row_total, offset, dx);
}

cudaError_t ElementwiseChain(const float* const* a, int count, bool multiply, bool relu, int64_t n, float* out,
                             cudaStream_t stream) {
  if (n <= 0 || count < 1) return cudaGetLastError();
  // The first launch takes up to eight arrays; each later one continues from out.
  int next = 0;
  while (next < count) {
    shape_cuda::ChainArrays arrays{};
    arrays.count = 0;
    if (next > 0) arrays.a[arrays.count++] = out;
    while (arrays.count < shape_cuda::kChainArrays && next < count) arrays.a[arrays.count++] = a[next++];
    const cudaError_t e =
        shape_cuda::Launch(n, stream, shape_cuda::ChainKernel, arrays, multiply, relu && next == count, n, out);
    if (e != cudaSuccess) return e;
  }
  return cudaSuccess;
}

cudaError_t ReluMaskGrad(const float* dy, const float* y, int64_t n, float* out, cudaStream_t stream) {
  return shape_cuda::Launch(n, stream, shape_cuda::ReluMaskGradKernel, dy, y, n, out);
}

}  // namespace ringtrain::gpu
