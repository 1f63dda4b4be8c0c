// Keras' RandomTranslation and RandomRotation over NHWC images: one random affine
// transform per example, sampled as TF's ImageProjectiveTransformV3
// (backends/cpu/image_transform.h). The kernels: backends/cpu/augment_kernels.cc,
// backends/cuda/random_kernels.h.
//
// In training each example's transform is drawn from its own stream
// (backends/cpu/augment_draws.h DrawAffineTransform); inference is the identity (Keras
// does nothing at inference). The gradient: the adjoint of the sampling. No weights.
//
//   RandomTranslation: height_factor, width_factor (required; a number f -> [-f, f], or
//     [lo, hi], fractions of the image height/width), fill_mode ("reflect"),
//     interpolation ("bilinear"), fill_value (0.0), seed (null). Per example:
//     dy = U(lo_h, hi_h) * H, dx = U(lo_w, hi_w) * W (height first, as Keras draws them);
//     output (x, y) samples the input at (x - dx, y - dy).
//   RandomRotation: factor (required; a fraction of 2*pi, number or pair), fill_mode,
//     interpolation, fill_value, seed. Per example: angle = U(lo, hi) * 2*pi; the
//     rotation about the pixel-grid centre ((W-1)/2, (H-1)/2) that Keras builds:
//     [cos, -sin, x_off, sin, cos, y_off, 0, 0] with
//     x_off = ((W-1) - (cos (W-1) - sin (H-1))) / 2, y_off = ((H-1) - (sin (W-1) + cos (H-1))) / 2.
//
// Threading: one thread at a time (Layer).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "nn/layer.h"

namespace ringtrain::nn {

class RandomAffine final : public Layer {
 public:
  static StatusOr<std::unique_ptr<Layer>> CreateTranslation(const nlohmann::json& j, std::string name, const Shape& in,
                                                            const std::string& ctx);
  static StatusOr<std::unique_ptr<Layer>> CreateRotation(const nlohmann::json& j, std::string name, const Shape& in,
                                                         const std::string& ctx);

  const char* type() const override { return rotation_ ? "random_rotation" : "random_translation"; }
  const char* class_name() const override { return rotation_ ? "RandomRotation" : "RandomTranslation"; }
  ops::Op op() const override;

 private:
  RandomAffine(std::string name, const Shape& in, bool rotation);
  static StatusOr<std::unique_ptr<Layer>> Finish(std::unique_ptr<RandomAffine> layer, const nlohmann::json& j,
                                                 const std::string& ctx);

  bool rotation_;
  uint64_t key_ = 0;
  std::pair<double, double> height_{0, 0}, width_{0, 0};  // translation factors
  std::pair<double, double> angle_{0, 0};                 // rotation factor (fractions of 2*pi)
  ops::Op::FillMode fill_mode_ = ops::Op::FillMode::kReflect;
  ops::Op::Interpolation interpolation_ = ops::Op::Interpolation::kBilinear;
  float fill_value_ = 0.0f;
};

}  // namespace ringtrain::nn
