// The CUDA kernels behind backends/cuda/depthwise_conv.h. The arithmetic of every element
// lives in backends/cuda/depthwise_math.h (unit-tested on the host against the CPU's
// kernels); this file only maps threads onto elements.
//
// Conventions as backends/cuda/gpu_kernels.cu: 256 threads per block; grid-stride loops
// with 64-bit indices; a grid capped at kMaxBlocks; an empty problem launches nothing;
// no atomics. Threads run along the channel axis, the fastest-varying one of every
// tensor here, so a warp reads and writes contiguous memory.
#include "backends/cuda/depthwise_conv.h"

#include <cuda_runtime.h>

#include <algorithm>

#include "backends/cuda/depthwise_math.h"

namespace ringtrain::gpu {
namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 65536;

unsigned Blocks(int64_t n) { return static_cast<unsigned>(std::min((n + kThreads - 1) / kThreads, kMaxBlocks)); }

__device__ inline int64_t GlobalThread() { return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; }
__device__ inline int64_t GridStride() { return static_cast<int64_t>(gridDim.x) * blockDim.x; }

// One thread per output element (n, oh, ow, f). The Window is passed by value; only its
// fields are read on the device.
__global__ void ForwardKernel(ops::Window g, int multiplier, const float* x, const float* w, int64_t n, float* y) {
  const int F = g.c * multiplier;
  const int64_t in_size = static_cast<int64_t>(g.h) * g.w * g.c;
  const int64_t per_image = static_cast<int64_t>(g.out_h) * g.out_w * F;
  for (int64_t e = GlobalThread(); e < n; e += GridStride()) {
    const int64_t image = e / per_image;
    int64_t rest = e % per_image;
    const int f = static_cast<int>(rest % F);
    rest /= F;
    const int ow = static_cast<int>(rest % g.out_w);
    const int oh = static_cast<int>(rest / g.out_w);
    y[e] = dwm::ForwardElement(g, multiplier, x + image * in_size, w, oh, ow, f);
  }
}

// One thread per input cell (n, ih, iw, c) gathers the gradients of the outputs that read it.
__global__ void InputGradKernel(ops::Window g, int multiplier, const float* d, const float* w, int64_t n, float* dx) {
  const int64_t in_size = static_cast<int64_t>(g.h) * g.w * g.c;
  const int64_t out_size = static_cast<int64_t>(g.out_h) * g.out_w * g.c * multiplier;
  for (int64_t e = GlobalThread(); e < n; e += GridStride()) {
    const int64_t image = e / in_size;
    int64_t rest = e % in_size;
    const int c = static_cast<int>(rest % g.c);
    rest /= g.c;
    const int iw = static_cast<int>(rest % g.w);
    const int ih = static_cast<int>(rest / g.w);
    dx[e] = dwm::InputGradElement(g, multiplier, d + image * out_size, w, ih, iw, c);
  }
}

// Filter gradient, pass 1: thread (lane, t, f) sums chunk `lane` of the output pixels of
// tap t, channel f, into out[(lane * taps + t) * F + f] (dw itself with one lane).
__global__ void FilterGradPartialKernel(ops::Window g, int multiplier, const float* x, const float* d, int64_t pixels,
                                        int64_t lanes, float* out) {
  const int F = g.c * multiplier;
  const int64_t per_lane = static_cast<int64_t>(g.kh) * g.kw * F;
  const int64_t n = lanes * per_lane;
  for (int64_t e = GlobalThread(); e < n; e += GridStride()) {
    const int64_t lane = e / per_lane;
    const int64_t rest = e % per_lane;
    const int f = static_cast<int>(rest % F);
    const int t = static_cast<int>(rest / F);
    int64_t begin, end;
    dwm::FilterGradPixels(pixels, lanes, lane, &begin, &end);
    out[e] = dwm::FilterGradChunk(g, multiplier, x, d, begin, end, t, f);
  }
}

// Pass 2: dw[i] = the lanes' sums in lane order.
__global__ void FilterGradSumKernel(const float* partial, int64_t lanes, int64_t per_lane, float* dw) {
  for (int64_t i = GlobalThread(); i < per_lane; i += GridStride()) {
    float sum = partial[i];
    for (int64_t l = 1; l < lanes; ++l) sum += partial[l * per_lane + i];
    dw[i] = sum;
  }
}

int64_t Pixels(const ops::Window& g, int batch) { return static_cast<int64_t>(batch) * g.out_h * g.out_w; }

}  // namespace

cudaError_t DepthwiseConvForward(const ops::Window& g, int multiplier, const float* x, int batch, const float* w,
                                 float* y, cudaStream_t stream) {
  const int64_t n = Pixels(g, batch) * g.c * multiplier;
  if (n <= 0) return cudaSuccess;
  ForwardKernel<<<Blocks(n), kThreads, 0, stream>>>(g, multiplier, x, w, n, y);
  return cudaGetLastError();
}

size_t DepthwiseFilterGradScratchFloats(const ops::Window& g, int multiplier, int batch) {
  const int64_t lanes = dwm::FilterGradLanes(Pixels(g, batch));
  const int64_t per_lane = static_cast<int64_t>(g.kh) * g.kw * g.c * multiplier;
  return lanes > 1 && per_lane > 0 ? static_cast<size_t>(lanes * per_lane) : 0;
}

cudaError_t DepthwiseConvFilterGrad(const ops::Window& g, int multiplier, const float* x, const float* d, int batch,
                                    float* dw, float* partial, cudaStream_t stream) {
  const int64_t per_lane = static_cast<int64_t>(g.kh) * g.kw * g.c * multiplier;
  if (per_lane <= 0) return cudaSuccess;
  const int64_t pixels = Pixels(g, batch);
  if (pixels <= 0) return cudaMemsetAsync(dw, 0, static_cast<size_t>(per_lane) * sizeof(float), stream);
  const int64_t lanes = dwm::FilterGradLanes(pixels);
  if (lanes > 1 && partial == nullptr) return cudaErrorInvalidValue;  // the scratch was not reserved
  float* out = lanes > 1 ? partial : dw;
  FilterGradPartialKernel<<<Blocks(lanes * per_lane), kThreads, 0, stream>>>(g, multiplier, x, d, pixels, lanes, out);
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess || lanes == 1) return err;
  FilterGradSumKernel<<<Blocks(per_lane), kThreads, 0, stream>>>(partial, lanes, per_lane, dw);
  return cudaGetLastError();
}

cudaError_t DepthwiseConvInputGrad(const ops::Window& g, int multiplier, const float* d, const float* w, int batch,
                                   float* dx, cudaStream_t stream) {
  const int64_t n = static_cast<int64_t>(batch) * g.h * g.w * g.c;
  if (n <= 0) return cudaSuccess;
  InputGradKernel<<<Blocks(n), kThreads, 0, stream>>>(g, multiplier, d, w, n, dx);
  return cudaGetLastError();
}

}  // namespace ringtrain::gpu
