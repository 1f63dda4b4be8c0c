// depthwise_conv2d: Keras DepthwiseConv2D over NHWC input. Each input channel c is
// convolved with its own depth_multiplier (m) filters: depthwise_kernel [kh, kw, c, m],
// output channel c * m + k (Keras' channel-major order), bias [c * m]. The passes are
// kernels::DepthwiseConv* (direct loops over contiguous channels).
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

class DepthwiseConv2D final : public Layer {
 public:
  // Fields: kernel_size, strides (1), padding ("valid"), depth_multiplier (1), groups (only 1),
  // dilation_rate (1), activation, use_bias (true); depthwise_initializer and
  // bias_initializer only at Keras' defaults. `in` must be [H, W, C].
  static StatusOr<std::unique_ptr<Layer>> Create(const nlohmann::json& j, std::string name, const Shape& in,
                                                 const std::string& ctx);

  const char* type() const override { return "depthwise_conv2d"; }
  const char* class_name() const override { return "DepthwiseConv2D"; }
  std::vector<ParamSpec> ParamSpecs() const override;
  void BindParams(const std::vector<float*>& params, const std::vector<float*>& grads) override;
  const float* Forward(const float* in, int batch, bool training) override;
  const float* Backward(const float* dout, bool need_din) override;
  ops::Op op() const override;
  uint64_t ScratchFloatsPerExample(bool training) const override;

 private:
  DepthwiseConv2D(std::string name, const Shape& in, const Window2D& g, int multiplier, Activation act,
                  bool use_bias);

  Window2D g_;
  kernels::Window kg_;
  int multiplier_;
  Activation act_;
  bool use_bias_;

  float* kernel_ = nullptr;  // into the model's buffers
  float* bias_ = nullptr;
  float* dkernel_ = nullptr;
  float* dbias_ = nullptr;

  const float* x_ = nullptr;  // the input of the last training Forward
  int batch_ = 0;
  std::vector<float> out_, dpre_, din_;
};

}  // namespace ringtrain::nn
