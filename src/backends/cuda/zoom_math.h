// RandomZoom's per-example transform, repeating the CPU kernel's DrawZoomTransform
// (backends/cpu/random_zoom_kernel.cc) with random_math.h's generator:
// tests/gpu/zoom_math_test.cc checks both bit for bit on the host. The GPU's RandomZoom
// kernel (backends/cuda/zoom_kernel.cc) computes these on the host and samples with
// random_launch.h's AffineImages, as RandomTranslation does.
//
// Header-only, no CUDA dependency; pure functions.
#pragma once

#include <cstdint>

#include "backends/cuda/random_math.h"

namespace ringtrain::gpu::zoom {

// Example `example`'s transform t[8] of a height x width image: hz = U(1 + h_lo, 1 + h_hi)
// first, then wz = U(1 + w_lo, 1 + w_hi) (or wz = hz with same_aspect);
// t = [wz, 0, ((W - 1) / 2) (1 - wz), 0, hz, ((H - 1) / 2) (1 - hz), 0, 0] in float.
RT_HD inline void DrawZoom(const rm::StepKey& s, uint64_t key, int64_t example, int height, int width, double h_lo,
                           double h_hi, double w_lo, double w_hi, bool same_aspect, float* t) {
  rm::Rng rng = rm::ExampleRng(s, key, example);
  const float hz = rm::UniformIn(&rng, 1.0 + h_lo, 1.0 + h_hi);
  const float wz = same_aspect ? hz : rm::UniformIn(&rng, 1.0 + w_lo, 1.0 + w_hi);
  const float half_w = static_cast<float>((static_cast<double>(width) - 1.0) / 2.0);
  const float half_h = static_cast<float>((static_cast<double>(height) - 1.0) / 2.0);
  t[0] = wz;
  t[1] = 0.0f;
  t[2] = half_w * (1.0f - wz);
  t[3] = 0.0f;
  t[4] = hz;
  t[5] = half_h * (1.0f - hz);
  t[6] = 0.0f;
  t[7] = 0.0f;
}

}  // namespace ringtrain::gpu::zoom
