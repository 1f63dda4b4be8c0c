// The CUDA kernels behind the GPU's Dropout and augmentation ops (random_kernels.cu):
// each function enqueues its work on `stream` and returns cudaGetLastError() after its
// launches (cudaSuccess when enqueued, or when there is nothing to do); none
// synchronises or allocates. Images are NHWC, [batch, dims]; the arithmetic of every
// element is backends/cuda/random_math.h's, so the draws and results are the CPU layers'.
//
// Determinism: each output element is written by one thread; the adjoints that sum
// (the resize's and the affine sampling's) give one thread each example's channel, which
// adds in the CPU's order. No atomics.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

#include "backends/cuda/random_math.h"

namespace ringtrain::gpu {

// y[i] = x[i] * (rm::DropoutKeep(key, i, rate) ? scale : 0) for i in [0, n); y may be x.
cudaError_t DropoutForward(const float* x, size_t n, uint64_t key, float rate, float scale, float* y,
                           cudaStream_t stream);

// flips[b] = rm::DrawFlips(step, layer_key, b, horizontal, vertical) for b in [0, batch).
cudaError_t DrawFlipsOnDevice(const rm::StepKey& step, uint64_t layer_key, int batch, bool horizontal, bool vertical,
                              int32_t* flips, cudaStream_t stream);
// y = each example of x flipped as flips[b] says (the forward, and its own adjoint).
cudaError_t FlipImages(const float* x, int batch, const rm::ImageDims& d, const int32_t* flips, float* y,
                       cudaStream_t stream);

// offsets[2b], offsets[2b + 1] = example b's random crop offsets (rm::DrawCropOffsets).
cudaError_t DrawCropOffsetsOnDevice(const rm::StepKey& step, uint64_t layer_key, int batch, const rm::ImageDims& in,
                                    int height, int width, int32_t* offsets, cudaStream_t stream);
// y[b] = the height x width window of x[b] at offsets[2b], offsets[2b + 1], or at
// (h0, w0) for every example when offsets is null.
cudaError_t CropImages(const float* x, int batch, const rm::ImageDims& in, int height, int width,
                       const int32_t* offsets, int h0, int w0, float* y, cudaStream_t stream);
// dx[b] = dy[b] inside the window (as CropImages chose it), 0 elsewhere.
cudaError_t CropImagesAdjoint(const float* dy, int batch, const rm::ImageDims& in, int height, int width,
                              const int32_t* offsets, int h0, int w0, float* dx, cudaStream_t stream);
// y[b] = TF's bilinear resize of x[b]'s window `box` to height x width, and its adjoint
// (overwrites dx).
cudaError_t ResizeImages(const float* x, int batch, const rm::ImageDims& in, const rm::CropBox& box, int height,
                         int width, float* y, cudaStream_t stream);
cudaError_t ResizeImagesAdjoint(const float* dy, int batch, const rm::ImageDims& in, const rm::CropBox& box,
                                int height, int width, float* dx, cudaStream_t stream);

// The projective sampling of every example through its own transform. `transforms` is
// HOST memory, 8 floats per example; it is passed to the kernels as launch arguments
// (kAffineChunk examples per launch), so it may be reused as soon as the call returns.
constexpr int kAffineChunk = 64;
struct AffineSampling {
  rm::FillMode fill_mode = rm::FillMode::kReflect;
  rm::Interpolation interpolation = rm::Interpolation::kBilinear;
  float fill_value = 0.0f;
};
cudaError_t AffineImages(const float* x, int batch, const rm::ImageDims& d, const float* transforms,
                         const AffineSampling& s, float* y, cudaStream_t stream);
// dx = the adjoint of AffineImages applied to dy (overwrites dx).
cudaError_t AffineImagesAdjoint(const float* dy, int batch, const rm::ImageDims& d, const float* transforms,
                                const AffineSampling& s, float* dx, cudaStream_t stream);

}  // namespace ringtrain::gpu
