#include "backends/cuda/gpu_pad.h"

#include <cstdint>

namespace ringtrain::gpu {
namespace {

constexpr int kThreads = 256;

int Blocks(int64_t n) {
  const int64_t blocks = (n + kThreads - 1) / kThreads;
  return static_cast<int>(blocks < 65535 ? (blocks > 0 ? blocks : 1) : 65535);  // grid-stride beyond
}

__global__ void PadKernel(const float* __restrict__ x, int64_t total, int h, int w, int c, int pad_top,
                          int pad_left, int hp, int wp, float* __restrict__ xp) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int ch = static_cast<int>(i % c);
    int64_t rest = i / c;
    const int col = static_cast<int>(rest % wp) - pad_left;
    rest /= wp;
    const int row = static_cast<int>(rest % hp) - pad_top;
    const int64_t n = rest / hp;
    xp[i] = (row >= 0 && row < h && col >= 0 && col < w) ? x[((n * h + row) * w + col) * c + ch] : 0.0f;
  }
}

__global__ void CropKernel(const float* __restrict__ xp, int64_t total, int hp, int wp, int c, int pad_top,
                           int pad_left, int h, int w, float* __restrict__ x) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int ch = static_cast<int>(i % c);
    int64_t rest = i / c;
    const int col = static_cast<int>(rest % w);
    rest /= w;
    const int row = static_cast<int>(rest % h);
    const int64_t n = rest / h;
    x[i] = xp[((n * hp + row + pad_top) * wp + col + pad_left) * c + ch];
  }
}

}  // namespace

cudaError_t PadNhwc(const float* x, int batch, int h, int w, int c, int pad_top, int pad_left, int hp, int wp,
                    float* xp, cudaStream_t stream) {
  const int64_t total = static_cast<int64_t>(batch) * hp * wp * c;
  if (total == 0) return cudaSuccess;
  PadKernel<<<Blocks(total), kThreads, 0, stream>>>(x, total, h, w, c, pad_top, pad_left, hp, wp, xp);
  return cudaGetLastError();
}

cudaError_t CropNhwc(const float* xp, int batch, int hp, int wp, int c, int pad_top, int pad_left, int h, int w,
                     float* x, cudaStream_t stream) {
  const int64_t total = static_cast<int64_t>(batch) * h * w * c;
  if (total == 0) return cudaSuccess;
  CropKernel<<<Blocks(total), kThreads, 0, stream>>>(xp, total, hp, wp, c, pad_top, pad_left, h, w, x);
  return cudaGetLastError();
}

}  // namespace ringtrain::gpu
