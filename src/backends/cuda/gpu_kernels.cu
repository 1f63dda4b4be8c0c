// The CUDA kernels behind backends/cuda/gpu_kernels.h. The arithmetic of every element lives in
// backends/cuda/device_math.h (unit-tested on the host against the CPU kernels); this file only
// maps threads onto elements.
//
// Conventions: 256 threads per block; grid-stride loops with 64-bit indices (tensors
// may exceed 2^31 elements); a grid capped at kMaxBlocks; an empty problem launches
// nothing. No kernel uses atomics: each output element is written by one thread, and
// every sum runs in an order fixed by the problem's shape alone, so the bits are the
// same every run. Each entry point returns cudaGetLastError() after its launches.
#include "backends/cuda/gpu_kernels.h"

#include <cuda_runtime.h>

#include <algorithm>

#include "backends/cuda/device_math.h"

namespace ringtrain::gpu {
namespace {

constexpr int kThreads = 256;
// Enough blocks to fill any current GPU many times over; larger problems loop.
constexpr int64_t kMaxBlocks = 65536;

unsigned Blocks(int64_t n) { return static_cast<unsigned>(std::min((n + kThreads - 1) / kThreads, kMaxBlocks)); }

// The first index of this thread and the grid's stride, in 64 bits.
__device__ inline int64_t GlobalThread() {
  return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ inline int64_t GridStride() { return static_cast<int64_t>(gridDim.x) * blockDim.x; }

// ---------------------------------------------------------------- bias and activation

__global__ void BiasActivationKernel(float* y, const float* bias, int64_t n, int cols, bool relu) {
  for (int64_t i = GlobalThread(); i < n; i += GridStride()) {
    y[i] = dm::BiasActivation(y[i], bias, static_cast<int>(i % cols), relu);
  }
}

__global__ void ActivationGradKernel(const float* dy, const float* y, int64_t n, bool relu, float* dpre) {
  for (int64_t i = GlobalThread(); i < n; i += GridStride()) {
    dpre[i] = dm::ActivationGrad(dy[i], relu ? y[i] : 0.0f, relu);
  }
}

// Bias gradient with the relu mask fused in, pass 1: thread (x, y) of block (bx, by)
// sums lane bx * blockDim.y + y of column by * 32 + x (a warp reads 128 contiguous
// bytes of a row) into partial[lane * cols + col], and the lanes and column tiles a
// grid further on when the grid is capped. With one lane, partial is db.
constexpr int kTileCols = 32;
constexpr int kLanesPerBlock = 8;

__global__ void BiasGradPartialKernel(const float* dy, const float* y, int64_t rows, int cols, int64_t lanes,
                                      bool relu, float* dpre, float* partial) {
  const int64_t lane_stride = static_cast<int64_t>(gridDim.x) * blockDim.y;
  for (int64_t lane = static_cast<int64_t>(blockIdx.x) * blockDim.y + threadIdx.y; lane < lanes;
       lane += lane_stride) {
    int64_t begin, end;
    dm::BiasGradChunk(rows, lanes, lane, &begin, &end);
    for (int64_t tile = blockIdx.y; tile * kTileCols < cols; tile += gridDim.y) {
      const int64_t col = tile * kTileCols + threadIdx.x;
      if (col >= cols) continue;
      partial[lane * cols + col] =
          dm::ActivationBiasChunk(dy, y, begin, end, cols, static_cast<int>(col), relu, dpre);
    }
  }
}

// Pass 2: db[col] = the lanes' sums in lane order.
__global__ void BiasGradSumKernel(const float* partial, int64_t lanes, int cols, float* db) {
  for (int64_t col = GlobalThread(); col < cols; col += GridStride()) {
    float sum = partial[col];
#pragma unroll 8
    for (int64_t l = 1; l < lanes; ++l) sum += partial[l * cols + col];
    db[col] = sum;
  }
}

// ---------------------------------------------------------------- conv kernel layouts

__global__ void OhwiToHwioKernel(const float* ohwi, int kh, int kw, int c, int f, int64_t n, float* hwio) {
  for (int64_t o = GlobalThread(); o < n; o += GridStride()) hwio[dm::OhwiToHwioIndex(o, kh, kw, c, f)] = ohwi[o];
}

__global__ void HwioToOhwiKernel(const float* hwio, int kh, int kw, int c, int f, int64_t n, float* ohwi) {
  for (int64_t o = GlobalThread(); o < n; o += GridStride()) ohwi[o] = hwio[dm::OhwiToHwioIndex(o, kh, kw, c, f)];
}

// ---------------------------------------------------------------- max pooling
// Window is trivially copyable and passed by value; only its fields are read on the
// device (its in_size() is a host function).

__global__ void MaxPoolForwardKernel(kernels::Window g, const float* x, int64_t n, float* y, int32_t* argmax) {
  const int64_t per_example = static_cast<int64_t>(g.out_h) * g.out_w * g.c;
  const int64_t in_size = static_cast<int64_t>(g.h) * g.w * g.c;
  for (int64_t i = GlobalThread(); i < n; i += GridStride()) {
    const int64_t example = i / per_example;
    int64_t rest = i % per_example;
    const int c = static_cast<int>(rest % g.c);
    rest /= g.c;
    const int ow = static_cast<int>(rest % g.out_w);
    const int oh = static_cast<int>(rest / g.out_w);
    float value;
    argmax[i] = dm::MaxPoolScan(g, x + example * in_size, oh, ow, c, &value);
    y[i] = value;
  }
}

// One thread per input cell gathers the gradients of the outputs whose windows hold it.
__global__ void MaxPoolBackwardKernel(kernels::Window g, const int32_t* argmax, const float* dy, int64_t n,
                                      float* dx) {
  const int64_t per_example = static_cast<int64_t>(g.out_h) * g.out_w * g.c;
  const int64_t in_size = static_cast<int64_t>(g.h) * g.w * g.c;
  for (int64_t i = GlobalThread(); i < n; i += GridStride()) {
    const int64_t example = i / in_size;
    int64_t rest = i % in_size;
    const int c = static_cast<int>(rest % g.c);
    rest /= g.c;
    const int iw = static_cast<int>(rest % g.w);
    const int ih = static_cast<int>(rest / g.w);
    const int64_t out0 = example * per_example;
    dx[i] = dm::MaxPoolGather(g, argmax + out0, dy + out0, ih, iw, c);
  }
}

}  // namespace

cudaError_t BiasActivationForward(float* y, const float* bias, int64_t rows, int cols, bool relu,
                                  cudaStream_t stream) {
  const int64_t n = rows * cols;
  if (n <= 0 || (bias == nullptr && !relu)) return cudaSuccess;
  BiasActivationKernel<<<Blocks(n), kThreads, 0, stream>>>(y, bias, n, cols, relu);
  return cudaGetLastError();
}

cudaError_t ActivationBiasBackward(const float* dy, const float* y, int64_t rows, int cols, bool relu, float* dpre,
                                   float* db, float* partial, cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) {
    // No rows: the bias gradient is an empty sum.
    if (db != nullptr && cols > 0) return cudaMemsetAsync(db, 0, static_cast<size_t>(cols) * sizeof(float), stream);
    return cudaSuccess;
  }
  if (db == nullptr) {
    if (dpre == nullptr || (!relu && dpre == dy)) return cudaSuccess;  // nothing to write
    const int64_t n = rows * cols;
    ActivationGradKernel<<<Blocks(n), kThreads, 0, stream>>>(dy, y, n, relu, dpre);
    return cudaGetLastError();
  }
  const int64_t lanes = dm::BiasGradLanes(rows);
  if (lanes > 1 && partial == nullptr) return cudaErrorInvalidValue;  // BiasGradScratchFloats was not reserved
  const int64_t tiles = (static_cast<int64_t>(cols) + kTileCols - 1) / kTileCols;
  const int per_block = static_cast<int>(std::min<int64_t>(lanes, kLanesPerBlock));
  const dim3 block(kTileCols, static_cast<unsigned>(per_block));
  const dim3 grid(static_cast<unsigned>(std::min<int64_t>((lanes + per_block - 1) / per_block, kMaxBlocks)),
                  static_cast<unsigned>(std::min<int64_t>(tiles, 65535)));
  // Linear in place needs no dpre writes; the chunk function skips them when null.
  float* out = (!relu && dpre == dy) ? nullptr : dpre;
  BiasGradPartialKernel<<<grid, block, 0, stream>>>(dy, y, rows, cols, lanes, relu, out, lanes > 1 ? partial : db);
  if (lanes == 1) return cudaGetLastError();
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) return err;
  BiasGradSumKernel<<<Blocks(cols), kThreads, 0, stream>>>(partial, lanes, cols, db);
  return cudaGetLastError();
}

size_t BiasGradScratchFloats(int64_t rows, int cols) {
  const int64_t lanes = dm::BiasGradLanes(rows);
  return lanes > 1 && cols > 0 ? static_cast<size_t>(lanes) * static_cast<size_t>(cols) : 0;
}

cudaError_t HwioToOhwi(const float* hwio, int kh, int kw, int c, int f, float* ohwi, cudaStream_t stream) {
  const int64_t n = static_cast<int64_t>(kh) * kw * c * f;
  if (n <= 0) return cudaSuccess;
  HwioToOhwiKernel<<<Blocks(n), kThreads, 0, stream>>>(hwio, kh, kw, c, f, n, ohwi);
  return cudaGetLastError();
}

cudaError_t OhwiToHwio(const float* ohwi, int kh, int kw, int c, int f, float* hwio, cudaStream_t stream) {
  const int64_t n = static_cast<int64_t>(kh) * kw * c * f;
  if (n <= 0) return cudaSuccess;
  OhwiToHwioKernel<<<Blocks(n), kThreads, 0, stream>>>(ohwi, kh, kw, c, f, n, hwio);
  return cudaGetLastError();
}

cudaError_t MaxPoolForward(const kernels::Window& g, const float* x, int batch, float* y, int32_t* argmax,
                           cudaStream_t stream) {
  const int64_t n = static_cast<int64_t>(batch) * g.out_h * g.out_w * g.c;
  if (n <= 0) return cudaSuccess;
  MaxPoolForwardKernel<<<Blocks(n), kThreads, 0, stream>>>(g, x, n, y, argmax);
  return cudaGetLastError();
}

cudaError_t MaxPoolBackward(const kernels::Window& g, const int32_t* argmax, const float* dy, int batch, float* dx,
                            cudaStream_t stream) {
  const int64_t n = static_cast<int64_t>(batch) * g.h * g.w * g.c;
  if (n <= 0) return cudaSuccess;
  MaxPoolBackwardKernel<<<Blocks(n), kThreads, 0, stream>>>(g, argmax, dy, n, dx);
  return cudaGetLastError();
}

// ---------------------------------------------------------------- element-wise sums

namespace {

__global__ void AddArraysKernel(const float* a, const float* b, const float* mask, int64_t n, float* out) {
  for (int64_t i = GlobalThread(); i < n; i += GridStride()) {
    const float sum = a[i] + b[i];
    out[i] = mask == nullptr || mask[i] > 0.0f ? sum : 0.0f;
  }
}

__global__ void AccumulateKernel(float* acc, const float* x, int64_t n) {
  for (int64_t i = GlobalThread(); i < n; i += GridStride()) acc[i] += x[i];
}

}  // namespace

cudaError_t AddArrays(const float* a, const float* b, const float* mask, size_t n, float* out, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  const int64_t count = static_cast<int64_t>(n);
  AddArraysKernel<<<Blocks(count), kThreads, 0, stream>>>(a, b, mask, count, out);
  return cudaGetLastError();
}

cudaError_t AccumulateArray(float* acc, const float* x, size_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  const int64_t count = static_cast<int64_t>(n);
  AccumulateKernel<<<Blocks(count), kThreads, 0, stream>>>(acc, x, count);
  return cudaGetLastError();
}

}  // namespace ringtrain::gpu
