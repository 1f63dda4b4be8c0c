// cropping2d: Keras Cropping2D over NHWC input: [H, W, C] -> [H - top - bottom,
// W - left - right, C], the rows and columns at the edges dropped. Its op is kCropping2D
// (window.pad_top, pad_left: the first row and column kept; the output shape gives the
// rest); the CPU kernel is in backends/cpu/resample_kernels.cc.
//
// Threading: one thread at a time (the owning Model's). Errors: Create returns
// INVALID_ARGUMENT naming the field.
#pragma once

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "nn/layer.h"

namespace ringtrain::nn {

class Cropping2D final : public Layer {
 public:
  // Fields: cropping (0): an int (all four sides), [h, w] (symmetric per axis) or
  // [[top, bottom], [left, right]]; at least one row and column must remain, as Keras
  // requires. `in` must be [H, W, C].
  static StatusOr<std::unique_ptr<Layer>> Create(const nlohmann::json& j, std::string name, const Shape& in,
                                                 const std::string& ctx);

  const char* type() const override { return "cropping2d"; }
  const char* class_name() const override { return "Cropping2D"; }
  ops::Op op() const override;

 private:
  Cropping2D(std::string name, const Shape& in, int top, int bottom, int left, int right);

  int top_, left_;
};

}  // namespace ringtrain::nn
