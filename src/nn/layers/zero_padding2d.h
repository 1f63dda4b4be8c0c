// zero_padding2d: Keras ZeroPadding2D over NHWC input: [H, W, C] -> [top + H + bottom,
// left + W + right, C] with zeros around. Its op is kZeroPadding2D (window.pad_top,
// pad_left; the output shape gives the rest); the CPU backend's kernel is in
// backends/cpu/shape_kernels.cc.
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

class ZeroPadding2D final : public Layer {
 public:
  // Fields: padding (1): an int (all four sides), [h, w] (symmetric per axis) or
  // [[top, bottom], [left, right]]. `in` must be [H, W, C].
  static StatusOr<std::unique_ptr<Layer>> Create(const nlohmann::json& j, std::string name, const Shape& in,
                                                 const std::string& ctx);

  const char* type() const override { return "zero_padding2d"; }
  const char* class_name() const override { return "ZeroPadding2D"; }
  ops::Op op() const override;

 private:
  ZeroPadding2D(std::string name, const Shape& in, int top, int bottom, int left, int right);

  int top_, left_;
};

}  // namespace ringtrain::nn
