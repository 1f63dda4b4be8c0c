// TensorFlow's ImageProjectiveTransformV3 (what Keras' RandomTranslation and
// RandomRotation call through keras.ops.image.affine_transform) for one NHWC image,
// and its adjoint for the backward pass.
//
// A transform t = [a0, a1, a2, b0, b1, b2, c0, c1] maps the OUTPUT pixel (x, y) to the
// input point ((a0 x + a1 y + a2) / k, (b0 x + b1 y + b2) / k), k = c0 x + c1 y + 1
// (x the column, y the row, pixel centres at integers). The point is mapped into the
// image by the fill mode, exactly as TF's MapCoordinate does:
//   reflect  (d c b a | a b c d | d c b a)   wrap (a b c d | a b c d | a b c d)
//   nearest  (a a a a | a b c d | d d d d)   constant (k k k k | a b c d | k k k k)
// and sampled with "nearest" (std::round, half away from zero) or "bilinear"
// interpolation; a tap outside the image reads fill_value. Computed in float in TF's
// order, so results match TF's kernel.
//
// The sampling is linear in the image (fill_value enters as a constant), so Adjoint
// adds each output gradient to the input pixels it was sampled from, with the same
// weights: <Forward(x), y> == <x, Adjoint(y)> when fill_value is 0.
//
// Threading: const methods, no shared state. Nothing allocates.
#pragma once

#include <cstdint>

#include "ops/op.h"

namespace ringtrain::backends::cpu {

// The op's fill modes and interpolations (ops::Op::fill_mode, interpolation).
using FillMode = ops::Op::FillMode;
using Interpolation = ops::Op::Interpolation;

// TF's MapCoordinate<mode>(coord, len).
float MapCoordinate(FillMode mode, float coord, int64_t len);

struct ProjectiveSampler {
  int height = 0, width = 0, channels = 0;
  FillMode fill_mode = FillMode::kReflect;
  Interpolation interpolation = Interpolation::kBilinear;

  // in, out: [height, width, channels]. fill_row: `channels` copies of fill_value.
  void Forward(const float t[8], const float* in, const float* fill_row, float* out) const;
  // Adds the adjoint of Forward applied to dout into din. sink: `channels` floats of
  // scratch that receive the (discarded) share of taps outside the image.
  void AddAdjoint(const float t[8], const float* dout, float* din, float* sink) const;
};

}  // namespace ringtrain::backends::cpu
