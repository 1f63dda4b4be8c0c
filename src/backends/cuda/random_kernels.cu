// The CUDA kernels behind backends/cuda/random_launch.h: Dropout's mask, the augmentation
// layers' per-example draws and image maps. Every element's arithmetic is
// backends/cuda/random_math.h (checked on the host against the CPU layers); this file
// only maps threads onto elements.
//
// Conventions as gpu_kernels.cu: 256 threads per block, grid-stride loops with 64-bit
// indices, the grid capped, an empty problem launches nothing, no atomics. The adjoints
// that sum (bilinear resize, affine sampling) run one thread per (example, channel),
// each adding in the CPU's order, so their bits are the CPU's.
#include "backends/cuda/random_launch.h"

#include <cuda_runtime.h>

#include <algorithm>

namespace ringtrain::gpu {
namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 65536;

unsigned Blocks(int64_t n) { return static_cast<unsigned>(std::min((n + kThreads - 1) / kThreads, kMaxBlocks)); }

__device__ inline int64_t GlobalThread() { return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; }
__device__ inline int64_t GridStride() { return static_cast<int64_t>(gridDim.x) * blockDim.x; }

// ---------------------------------------------------------------- Dropout

__global__ void DropoutKernel(const float* x, int64_t n, uint64_t key, float rate, float scale, float* y) {
  for (int64_t i = GlobalThread(); i < n; i += GridStride()) {
    y[i] = rm::DropoutApply(x[i], key, static_cast<uint64_t>(i), rate, scale);
  }
}

// ---------------------------------------------------------------- RandomFlip

__global__ void DrawFlipsKernel(rm::StepKey step, uint64_t layer_key, int batch, bool horizontal, bool vertical,
                                int32_t* flips) {
  for (int64_t b = GlobalThread(); b < batch; b += GridStride()) {
    flips[b] = rm::DrawFlips(step, layer_key, b, horizontal, vertical);
  }
}

__global__ void FlipKernel(const float* __restrict__ x, int64_t total, rm::ImageDims d,
                           const int32_t* __restrict__ flips, float* __restrict__ y) {
  const int64_t per = d.size();
  for (int64_t i = GlobalThread(); i < total; i += GridStride()) {
    const int64_t b = i / per;
    y[i] = x[b * per + rm::FlipSource(i % per, d, flips[b])];
  }
}

// ---------------------------------------------------------------- RandomCrop

__global__ void DrawCropOffsetsKernel(rm::StepKey step, uint64_t layer_key, int batch, rm::ImageDims in, int height,
                                      int width, int32_t* offsets) {
  for (int64_t b = GlobalThread(); b < batch; b += GridStride()) {
    int h0 = 0, w0 = 0;
    rm::DrawCropOffsets(step, layer_key, b, in, height, width, &h0, &w0);
    offsets[2 * b] = h0;
    offsets[2 * b + 1] = w0;
  }
}

__global__ void CropKernel(const float* __restrict__ x, int64_t total, rm::ImageDims in, int height, int width,
                           const int32_t* __restrict__ offsets, int h0, int w0, float* __restrict__ y) {
  const int64_t per_out = static_cast<int64_t>(height) * width * in.channels, per_in = in.size();
  for (int64_t i = GlobalThread(); i < total; i += GridStride()) {
    const int64_t b = i / per_out;
    const int bh = offsets != nullptr ? offsets[2 * b] : h0;
    const int bw = offsets != nullptr ? offsets[2 * b + 1] : w0;
    y[i] = x[b * per_in + rm::CropSource(i % per_out, in, width, bh, bw)];
  }
}

__global__ void CropAdjointKernel(const float* __restrict__ dy, int64_t total, rm::ImageDims in, int height,
                                  int width, const int32_t* __restrict__ offsets, int h0, int w0,
                                  float* __restrict__ dx) {
  const int64_t per_out = static_cast<int64_t>(height) * width * in.channels, per_in = in.size();
  for (int64_t i = GlobalThread(); i < total; i += GridStride()) {
    const int64_t b = i / per_in;
    const int bh = offsets != nullptr ? offsets[2 * b] : h0;
    const int bw = offsets != nullptr ? offsets[2 * b + 1] : w0;
    const int64_t t = rm::CropTarget(i % per_in, in, height, width, bh, bw);
    dx[i] = t >= 0 ? dy[b * per_out + t] : 0.0f;
  }
}

__global__ void ResizeKernel(const float* __restrict__ x, int64_t total, rm::ImageDims in, rm::CropBox box,
                             int height, int width, float* __restrict__ y) {
  const int64_t per_out = static_cast<int64_t>(height) * width * in.channels, per_in = in.size();
  for (int64_t i = GlobalThread(); i < total; i += GridStride()) {
    const int64_t b = i / per_out;
    y[i] = rm::ResizeElement(x + b * per_in, in, box, height, width, i % per_out);
  }
}

// One thread per (example, channel).
__global__ void ResizeAdjointKernel(const float* __restrict__ dy, int64_t lanes, rm::ImageDims in, rm::CropBox box,
                                    int height, int width, float* __restrict__ dx) {
  const int64_t per_out = static_cast<int64_t>(height) * width * in.channels, per_in = in.size();
  for (int64_t i = GlobalThread(); i < lanes; i += GridStride()) {
    const int64_t b = i / in.channels;
    rm::ResizeAdjointChannel(dy + b * per_out, in, box, height, width, i % in.channels, dx + b * per_in);
  }
}

// ---------------------------------------------------------------- RandomTranslation, RandomRotation

// Up to kAffineChunk examples' transforms, passed by value (2 KiB of launch arguments).
struct TransformChunk {
  int first = 0, count = 0;
  float t[kAffineChunk * 8];
};

// Example e's transform of the chunk into registers (indexed loads of the arguments).
__device__ inline void LoadTransform(const TransformChunk& chunk, int64_t e, float t[8]) {
#pragma unroll
  for (int q = 0; q < 8; ++q) t[q] = chunk.t[e * 8 + q];
}

__global__ void AffineKernel(TransformChunk chunk, const float* __restrict__ x, rm::ImageDims d, AffineSampling s,
                             float* __restrict__ y) {
  const int64_t per = d.size();
  const int64_t total = chunk.count * per;
  for (int64_t i = GlobalThread(); i < total; i += GridStride()) {
    const int64_t e = i / per;
    const int64_t b = chunk.first + e;
    float t[8];
    LoadTransform(chunk, e, t);
    y[b * per + i % per] = rm::AffineElement(t, x + b * per, d, s.fill_mode, s.interpolation, s.fill_value, i % per);
  }
}

// One thread per (example, channel) of the chunk.
__global__ void AffineAdjointKernel(TransformChunk chunk, const float* __restrict__ dy, rm::ImageDims d,
                                    AffineSampling s, float* __restrict__ dx) {
  const int64_t per = d.size();
  const int64_t lanes = static_cast<int64_t>(chunk.count) * d.channels;
  for (int64_t i = GlobalThread(); i < lanes; i += GridStride()) {
    const int64_t e = i / d.channels;
    const int64_t b = chunk.first + e;
    float t[8];
    LoadTransform(chunk, e, t);
    rm::AffineAdjointChannel(t, dy + b * per, d, s.fill_mode, s.interpolation, i % d.channels, dx + b * per);
  }
}

// The chunk of examples [first, first + count) of the host transforms.
TransformChunk Chunk(const float* transforms, int first, int count) {
  TransformChunk c;
  c.first = first;
  c.count = count;
  std::copy(transforms + static_cast<size_t>(first) * 8, transforms + static_cast<size_t>(first + count) * 8, c.t);
  return c;
}

}  // namespace

cudaError_t DropoutForward(const float* x, size_t n, uint64_t key, float rate, float scale, float* y,
                           cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  const int64_t total = static_cast<int64_t>(n);
  DropoutKernel<<<Blocks(total), kThreads, 0, stream>>>(x, total, key, rate, scale, y);
  return cudaGetLastError();
}

cudaError_t DrawFlipsOnDevice(const rm::StepKey& step, uint64_t layer_key, int batch, bool horizontal, bool vertical,
                              int32_t* flips, cudaStream_t stream) {
  if (batch <= 0) return cudaSuccess;
  DrawFlipsKernel<<<Blocks(batch), kThreads, 0, stream>>>(step, layer_key, batch, horizontal, vertical, flips);
  return cudaGetLastError();
}

cudaError_t FlipImages(const float* x, int batch, const rm::ImageDims& d, const int32_t* flips, float* y,
                       cudaStream_t stream) {
  const int64_t total = static_cast<int64_t>(batch) * d.size();
  if (total <= 0) return cudaSuccess;
  FlipKernel<<<Blocks(total), kThreads, 0, stream>>>(x, total, d, flips, y);
  return cudaGetLastError();
}

cudaError_t DrawCropOffsetsOnDevice(const rm::StepKey& step, uint64_t layer_key, int batch, const rm::ImageDims& in,
                                    int height, int width, int32_t* offsets, cudaStream_t stream) {
  if (batch <= 0) return cudaSuccess;
  DrawCropOffsetsKernel<<<Blocks(batch), kThreads, 0, stream>>>(step, layer_key, batch, in, height, width, offsets);
  return cudaGetLastError();
}

cudaError_t CropImages(const float* x, int batch, const rm::ImageDims& in, int height, int width,
                       const int32_t* offsets, int h0, int w0, float* y, cudaStream_t stream) {
  const int64_t total = static_cast<int64_t>(batch) * height * width * in.channels;
  if (total <= 0) return cudaSuccess;
  CropKernel<<<Blocks(total), kThreads, 0, stream>>>(x, total, in, height, width, offsets, h0, w0, y);
  return cudaGetLastError();
}

cudaError_t CropImagesAdjoint(const float* dy, int batch, const rm::ImageDims& in, int height, int width,
                              const int32_t* offsets, int h0, int w0, float* dx, cudaStream_t stream) {
  const int64_t total = static_cast<int64_t>(batch) * in.size();
  if (total <= 0) return cudaSuccess;
  CropAdjointKernel<<<Blocks(total), kThreads, 0, stream>>>(dy, total, in, height, width, offsets, h0, w0, dx);
  return cudaGetLastError();
}

cudaError_t ResizeImages(const float* x, int batch, const rm::ImageDims& in, const rm::CropBox& box, int height,
                         int width, float* y, cudaStream_t stream) {
  const int64_t total = static_cast<int64_t>(batch) * height * width * in.channels;
  if (total <= 0) return cudaSuccess;
  ResizeKernel<<<Blocks(total), kThreads, 0, stream>>>(x, total, in, box, height, width, y);
  return cudaGetLastError();
}

cudaError_t ResizeImagesAdjoint(const float* dy, int batch, const rm::ImageDims& in, const rm::CropBox& box,
                                int height, int width, float* dx, cudaStream_t stream) {
  const int64_t lanes = static_cast<int64_t>(batch) * in.channels;
  if (lanes <= 0 || in.size() <= 0) return cudaSuccess;
  ResizeAdjointKernel<<<Blocks(lanes), kThreads, 0, stream>>>(dy, lanes, in, box, height, width, dx);
  return cudaGetLastError();
}

cudaError_t AffineImages(const float* x, int batch, const rm::ImageDims& d, const float* transforms,
                         const AffineSampling& s, float* y, cudaStream_t stream) {
  if (batch <= 0 || d.size() <= 0) return cudaSuccess;
  for (int first = 0; first < batch; first += kAffineChunk) {
    const int count = std::min(kAffineChunk, batch - first);
    AffineKernel<<<Blocks(static_cast<int64_t>(count) * d.size()), kThreads, 0, stream>>>(
        Chunk(transforms, first, count), x, d, s, y);
    const cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) return e;
  }
  return cudaSuccess;
}

cudaError_t AffineImagesAdjoint(const float* dy, int batch, const rm::ImageDims& d, const float* transforms,
                                const AffineSampling& s, float* dx, cudaStream_t stream) {
  if (batch <= 0 || d.size() <= 0) return cudaSuccess;
  for (int first = 0; first < batch; first += kAffineChunk) {
    const int count = std::min(kAffineChunk, batch - first);
    AffineAdjointKernel<<<Blocks(static_cast<int64_t>(count) * d.channels), kThreads, 0, stream>>>(
        Chunk(transforms, first, count), dy, d, s, dx);
    const cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) return e;
  }
  return cudaSuccess;
}

}  // namespace ringtrain::gpu
