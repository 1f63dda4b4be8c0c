// separable_conv2d: Keras SeparableConv2D over NHWC input: a depthwise convolution
// (depthwise_kernel [kh, kw, c, m], no bias, linear) into c * m channels, then a
// pointwise 1x1 convolution (pointwise_kernel [1, 1, c * m, filters]) with the bias
// [filters] and the activation. The depthwise pass is kernels::DepthwiseConv*; the
// pointwise one is a dense product over the pixels (kernels::Dense*).
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
#include "nn/layers/window.h"

namespace ringtrain::nn {

class SeparableConv2D final : public Layer {
 public:
  // Fields: filters, kernel_size, strides (1), padding ("valid"), depth_multiplier (1), groups (only 1),
  // dilation_rate (1), activation, use_bias (true); the initializers only at Keras'
  // defaults. `in` must be [H, W, C].
  static StatusOr<std::unique_ptr<Layer>> Create(const nlohmann::json& j, std::string name, const Shape& in,
                                                 const std::string& ctx);

  const char* type() const override { return "separable_conv2d"; }
  const char* class_name() const override { return "SeparableConv2D"; }
  std::vector<ParamSpec> ParamSpecs() const override;
  void BindParams(const std::vector<float*>& params, const std::vector<float*>& grads) override;
  const float* Forward(const float* in, int batch, bool training) override;
  const float* Backward(const float* dout, bool need_din) override;
  ops::Op op() const override;
  uint64_t ScratchFloatsPerExample(bool training) const override;

 private:
  SeparableConv2D(std::string name, const Shape& in, const Window2D& g, int multiplier, int filters, Activation act,
                  bool use_bias);
  int mid_channels() const { return g_.channels * multiplier_; }

  Window2D g_;
  kernels::Window kg_;
  int multiplier_;
  int filters_;
  Activation act_;
  bool use_bias_;

  float* depthwise_ = nullptr;  // into the model's buffers
  float* pointwise_ = nullptr;
  float* bias_ = nullptr;
  float* ddepthwise_ = nullptr;
  float* dpointwise_ = nullptr;
  float* dbias_ = nullptr;

  const float* x_ = nullptr;  // the input of the last training Forward
  int batch_ = 0;
  std::vector<float> mid_, out_, dpre_, dmid_, din_, scratch_;
};

}  // namespace ringtrain::nn
