// The per-element arithmetic of RandomBrightness and RandomContrast, for the CUDA
// kernels (backends/cuda/image_adjust_kernels.cu), repeating the CPU kernels
// (backends/cpu/image_adjust_kernels.cc) operation for operation;
// tests/gpu/image_adjust_math_test.cc checks them on the host bit for bit. Each example's
// factor is rm::ExampleRng / rm::UniformIn (backends/cuda/random_math.h) of the step and
// the layer's key, as the CPU's augment_draws.
//
// Header-only, no CUDA dependency; pure functions.
#pragma once

#include <cstdint>

#include "backends/cuda/random_math.h"

namespace ringtrain::gpu::adjust {

// Example `example`'s factor: U(lo, hi) from its stream (brightness: the delta's
// fraction of the value range; contrast: the contrast factor).
RT_HD inline float Factor(const rm::StepKey& s, uint64_t key, int64_t example, double lo, double hi) {
  rm::Rng rng = rm::ExampleRng(s, key, example);
  return rm::UniformIn(&rng, lo, hi);
}

// TensorFlow's clip_by_value: minimum(maximum(t, lo), hi), and its gradient's mask.
RT_HD inline float Clip(float t, float lo, float hi) {
  const float a = t > lo ? t : lo;
  return a < hi ? a : hi;
}
RT_HD inline float ClipGrad(float dy, float t, float lo, float hi) { return (t >= lo && t <= hi) ? dy : 0.0f; }

// RandomBrightness before the clip: x + factor * (hi - lo).
RT_HD inline float Brighten(float x, float factor, float lo, float hi) { return x + factor * (hi - lo); }

// RandomContrast's channel mean of one example's [h, w, c] image: per column the sum over
// the height from 0 divided by h, those summed over the width from 0, divided by w.
RT_HD inline float ChannelMean(const float* img, int h, int w, int c, int channel) {
  float total = 0.0f;
  for (int x = 0; x < w; ++x) {
    float column = 0.0f;
    for (int y = 0; y < h; ++y) column += img[(static_cast<int64_t>(y) * w + x) * c + channel];
    total += column / static_cast<float>(h);
  }
  return total / static_cast<float>(w);
}
// Before the clip: (x - mean) * factor + mean.
RT_HD inline float Contrast(float x, float mean, float factor) { return (x - mean) * factor + mean; }
// The input gradient from the clipped gradient g of this element and the channel's sum
// s of them: g * factor + ((s * (1 - factor)) / h) / w.
RT_HD inline float ContrastGrad(float g, float sum, float factor, int h, int w) {
  return g * factor + ((sum * (1.0f - factor)) / static_cast<float>(h)) / static_cast<float>(w);
}

}  // namespace ringtrain::gpu::adjust
