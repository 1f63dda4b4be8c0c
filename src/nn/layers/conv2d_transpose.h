// conv2d_transpose: Keras Conv2DTranspose over NHWC input [H, W, C] -> [Ho, Wo, filters],
// kernel [kh, kw, filters, C] (Keras' layout), bias [filters]. Ho is Keras'
// deconv_output_length (the dilated kernel, padding, strides and output_padding); the
// output is the input gradient of the Conv2D from [Ho, Wo, filters] to [H, W, C] with
// that kernel (HWIO for it), as TensorFlow's conv2d_transpose computes it.
//
// Its op is kConv2DTranspose: op.window is that Conv2D's geometry (h, w, c = Ho, Wo,
// filters; out_h, out_w = H, W; kernel, strides, dilation, padding), op.units = filters,
// activation, use_bias. The CPU kernel is backends/cpu/conv_transpose_kernel.cc.
//
// Threading: one thread at a time (the owning Model's). Errors: Create returns
// INVALID_ARGUMENT naming the field.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "nn/keras/json_fields.h"
#include "nn/layer.h"
#include "nn/regularizers/regularizer.h"
#include "ops/window.h"

namespace ringtrain::nn {

class Conv2DTranspose final : public Layer {
 public:
  // Fields: filters, kernel_size, strides (1), padding ("valid"), output_padding (null:
  // Keras' default length; else an int or a pair, each below its stride), dilation_rate
  // (1; not with strides > 1), groups (1 only), activation (linear), use_bias (true),
  // kernel_initializer ("glorot_uniform"), bias_initializer ("zeros"), kernel_regularizer /
  // bias_regularizer (null). `in` must be [H, W, C].
  static StatusOr<std::unique_ptr<Layer>> Create(const nlohmann::json& j, std::string name, const Shape& in,
                                                 const std::string& ctx);

  const char* type() const override { return "conv2d_transpose"; }
  const char* class_name() const override { return "Conv2DTranspose"; }
  std::vector<ParamSpec> ParamSpecs() const override;
  ops::Op op() const override;

 private:
  Conv2DTranspose(std::string name, const Shape& in, const ops::Window& g, Activation act, bool use_bias,
                  const Initializer& kernel_init, const Initializer& bias_init);

  ops::Window g_;  // the Conv2D whose input gradient this layer is
  Activation act_;
  bool use_bias_;
  Initializer kernel_init_, bias_init_;
  Regularizer kernel_regularizer_, bias_regularizer_;
};

}  // namespace ringtrain::nn
