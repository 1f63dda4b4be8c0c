// conv2d: Keras Conv2D over NHWC input, kernel HWIO [kh, kw, in / groups, filters], bias
// [filters]. Its op is kConv2D (window, filters, groups, dilation, activation, bias);
// the CPU backend's kernel is backends/cpu/conv2d_kernel.cc.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "nn/keras/json_fields.h"
#include "nn/layer.h"
#include "nn/regularizers/regularizer.h"
#include "nn/layers/window.h"

namespace ringtrain::nn {

class Conv2D final : public Layer {
 public:
  // Fields: filters, kernel_size, strides (1), padding ("valid"), dilation_rate (1),
  // groups (1), activation (linear; any of ops/activation.h), use_bias (true),
  // kernel_initializer ("glorot_uniform"), bias_initializer ("zeros"),
  // kernel_regularizer / bias_regularizer (null; nn/regularizers/regularizer.h).
  // `in` must be [H, W, C]. `ctx` prefixes error messages.
  static StatusOr<std::unique_ptr<Layer>> Create(const nlohmann::json& j, std::string name, const Shape& in,
                                                 const std::string& ctx);

  const char* type() const override { return "conv2d"; }
  const char* class_name() const override { return "Conv2D"; }
  std::vector<ParamSpec> ParamSpecs() const override;
  ops::Op op() const override;

 private:
  Conv2D(std::string name, const Shape& in, const Window2D& g, int filters, int groups, Activation act,
         bool use_bias, const Initializer& kernel_init, const Initializer& bias_init);

  Window2D g_;
  int filters_;
  int groups_;
  Activation act_;
  bool use_bias_;
  Initializer kernel_init_, bias_init_;
  Regularizer kernel_regularizer_, bias_regularizer_;  // Keras' kernel_/bias_regularizer
};

}  // namespace ringtrain::nn
