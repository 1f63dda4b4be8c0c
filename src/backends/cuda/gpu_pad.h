// Explicit zero padding for convolutions whose 'same' padding is asymmetric
// (TensorFlow puts the odd cell after; cuDNN pads both sides alike). The layer copies
// its input into a padded buffer, runs cuDNN without padding, and crops the input
// gradient back. Both enqueue on `stream` and return the launch's error.
#pragma once

#include <cuda_runtime_api.h>

namespace ringtrain::gpu {

// xp[n, hp, wp, c] = x[n, i - pad_top, j - pad_left, c] inside x, else 0.
cudaError_t PadNhwc(const float* x, int batch, int h, int w, int c, int pad_top, int pad_left, int hp, int wp,
                    float* xp, cudaStream_t stream);
// x[n, i, j, c] = xp[n, i + pad_top, j + pad_left, c]: the inverse of PadNhwc's copy.
cudaError_t CropNhwc(const float* xp, int batch, int hp, int wp, int c, int pad_top, int pad_left, int h, int w,
                     float* x, cudaStream_t stream);

}  // namespace ringtrain::gpu
