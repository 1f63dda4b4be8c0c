// Keras' RandomTranslation and RandomRotation over NHWC images: one random affine
// transform per example, sampled as TF's ImageProjectiveTransformV3 (nn/layers/image_transform.h).
//
// Training Forward draws each example's transform from its own stream
// (nn/layers/augment_common.h); inference Forward is the identity (returns `in` itself, as
// Keras does nothing at inference). Backward applies the adjoint of the last training
// Forward's sampling. No weights.
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
// Threading: one thread at a time (Layer). Forward/Backward allocate nothing after the
// first call with a batch size.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "nn/layers/image_transform.h"
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
  const float* Forward(const float* in, int batch, bool training) override;
  const float* Backward(const float* dout, bool need_din) override;
  ops::Op op() const override;

  // Example i's transform in the last training Forward (8 floats), for tests.
  const float* transform(int i) const { return &transforms_[static_cast<size_t>(i) * 8]; }

 private:
  RandomAffine(std::string name, const Shape& in, bool rotation);
  static StatusOr<std::unique_ptr<Layer>> Finish(std::unique_ptr<RandomAffine> layer, const nlohmann::json& j,
                                                 const std::string& ctx);
  void DrawTransform(int64_t example, float* t) const;

  bool rotation_;
  uint64_t key_ = 0;
  std::pair<double, double> height_{0, 0}, width_{0, 0};  // translation factors
  std::pair<double, double> angle_{0, 0};                 // rotation factor (fractions of 2*pi)
  ProjectiveSampler sampler_;
  float fill_value_ = 0.0f;
  int batch_ = 0;
  std::vector<float> transforms_, fill_row_, sink_, out_, din_;
};

}  // namespace ringtrain::nn
