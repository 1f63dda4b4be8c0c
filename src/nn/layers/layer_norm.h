// LayerNormalization (Keras 3 and tf.keras 2): each example's values over the
// normalized trailing axes (the last by default) scaled to mean 0 and variance 1:
//   out = gamma * (x - mean) / sqrt(var + eps) + beta   (biased variance, per row)
//   dx  = invstd * (g - mean(g) - xhat * mean(g * xhat)),  g = dy * gamma
// gamma and beta have the normalized axes' shape. The same in training and inference.
// Its op is kLayerNorm (row_size: the normalized axes' product, contiguous since they are
// trailing); the CPU backend's kernel is backends/cpu/layer_norm_kernel.cc.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "nn/layer.h"

namespace ringtrain::nn {

class LayerNorm final : public Layer {
 public:
  // Keras' arguments: axis (-1, or a list of trailing axes), epsilon (0.001), center,
  // scale, rms_scaling (false only), initializers (defaults only), regularizers and
  // constraints (null only).
  static StatusOr<std::unique_ptr<Layer>> Create(const nlohmann::json& j, std::string name, const Shape& in,
                                                 const std::string& ctx);

  const char* type() const override { return "layer_normalization"; }
  const char* class_name() const override { return "LayerNormalization"; }
  std::vector<ParamSpec> ParamSpecs() const override;
  ops::Op op() const override;

 private:
  LayerNorm(std::string name, const Shape& in, int num_axes, float epsilon, bool center, bool scale);

  std::vector<int64_t> param_shape_;  // the normalized axes' dimensions
  size_t row_ = 0;                    // elements per row (their product)
  float epsilon_;
  bool center_, scale_;
};

}  // namespace ringtrain::nn
