// zero_padding2d: Keras ZeroPadding2D over NHWC input: [H, W, C] -> [top + H + bottom,
// left + W + right, C] with zeros around; Backward takes the inner block of dy.
//
// Threading: one thread at a time (the owning Model's). Errors: Create returns
// INVALID_ARGUMENT naming the field.
#pragma once

#include <memory>
#include <string>
#include <vector>

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
  const float* Forward(const float* in, int batch, bool training) override;
  const float* Backward(const float* dout, bool need_din) override;
  ops::Op op() const override;

 private:
  ZeroPadding2D(std::string name, const Shape& in, int top, int bottom, int left, int right);

  int top_, left_;
  int batch_ = 0;
  std::vector<float> out_, din_;
};

}  // namespace ringtrain::nn
