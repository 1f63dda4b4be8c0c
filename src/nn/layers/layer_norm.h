// LayerNormalization (Keras 3 and tf.keras 2): each example's values over the
// normalized trailing axes (the last by default) scaled to mean 0 and variance 1:
//   out = gamma * (x - mean) / sqrt(var + eps) + beta   (biased variance, per row)
//   dx  = invstd * (g - mean(g) - xhat * mean(g * xhat)),  g = dy * gamma
// gamma and beta have the normalized axes' shape. The same in training and inference.
// Rows are contiguous (the normalized axes are trailing), sums in double.
// Threading: one thread at a time (layer.h).
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
  void BindParams(const std::vector<float*>& params, const std::vector<float*>& grads) override;
  const float* Forward(const float* in, int batch, bool training) override;
  const float* Backward(const float* dout, bool need_din) override;
  ops::Op op() const override;

 private:
  LayerNorm(std::string name, const Shape& in, int num_axes, float epsilon, bool center, bool scale);

  std::vector<int64_t> param_shape_;  // the normalized axes' dimensions
  size_t row_ = 0;                    // elements per row (their product)
  float epsilon_;
  bool center_, scale_;
  float *gamma_ = nullptr, *beta_ = nullptr, *dgamma_ = nullptr, *dbeta_ = nullptr;

  const float* x_ = nullptr;  // the input of the last Forward
  size_t rows_ = 0;
  std::vector<float> mean_, invstd_;  // per row
  std::vector<double> acc_;           // dgamma and dbeta sums
  std::vector<float> g_;              // one row of dy * gamma
  std::vector<float> out_, din_;
};

}  // namespace ringtrain::nn
