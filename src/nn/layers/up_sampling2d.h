// up_sampling2d: Keras UpSampling2D over NHWC input: [H, W, C] -> [H * size_h,
// W * size_w, C]. "nearest" repeats each row and column; "bilinear" is tf.image.resize's
// bilinear (half-pixel centres, no antialiasing), as Keras computes it. Its op is
// kUpSampling2D (interpolation; the sizes from the shapes); the CPU kernel is in
// backends/cpu/resample_kernels.cc.
//
// Threading: one thread at a time (the owning Model's). Errors: Create returns
// INVALID_ARGUMENT naming the field.
#pragma once

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "nn/layer.h"
#include "ops/op.h"

namespace ringtrain::nn {

class UpSampling2D final : public Layer {
 public:
  // Fields: size (2): an int or [size_h, size_w]; interpolation ("nearest"): "nearest" or
  // "bilinear" (Keras' other methods are refused). `in` must be [H, W, C].
  static StatusOr<std::unique_ptr<Layer>> Create(const nlohmann::json& j, std::string name, const Shape& in,
                                                 const std::string& ctx);

  const char* type() const override { return "up_sampling2d"; }
  const char* class_name() const override { return "UpSampling2D"; }
  ops::Op op() const override;

 private:
  UpSampling2D(std::string name, const Shape& in, int size_h, int size_w, ops::Op::Interpolation interpolation);

  ops::Op::Interpolation interpolation_;
};

}  // namespace ringtrain::nn
