// conv2d: Keras Conv2D over NHWC input, kernel HWIO [kh, kw, in, filters], bias
// [filters]. The passes are kernels::ConvForward / ConvFilterGrad / ConvInputGrad,
// with the bias and the activation fused into them. With dilation_rate > 1 or groups > 1
// the passes are kernels::GroupedConv* (im2col per group + sgemm) instead.
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
  // groups (1), activation (linear; any of nn/layers/activations.h), use_bias (true),
  // kernel_initializer ("glorot_uniform"), bias_initializer ("zeros"),
  // kernel_regularizer / bias_regularizer (null; nn/regularizers/regularizer.h).
  // `in` must be [H, W, C]. `ctx` prefixes error messages.
  static StatusOr<std::unique_ptr<Layer>> Create(const nlohmann::json& j, std::string name, const Shape& in,
                                                 const std::string& ctx);

  const char* type() const override { return "conv2d"; }
  const char* class_name() const override { return "Conv2D"; }
  std::vector<ParamSpec> ParamSpecs() const override;
  void BindParams(const std::vector<float*>& params, const std::vector<float*>& grads) override;
  const float* Forward(const float* in, int batch, bool training) override;
  const float* Backward(const float* dout, bool need_din) override;
  ops::Op op() const override;
  uint64_t ScratchFloatsPerExample(bool training) const override;

 private:
  Conv2D(std::string name, const Shape& in, const Window2D& g, int filters, int groups, Activation act,
         bool use_bias, const Initializer& kernel_init, const Initializer& bias_init);
  // relu and linear run fused in the kernels; the others after them, on pre_.
  bool fused() const { return act_ == Activation::kLinear || act_ == Activation::kRelu; }
  // Dilation or groups: the kernels::GroupedConv* passes.
  bool general() const { return groups_ > 1 || kg_.dilation_h > 1 || kg_.dilation_w > 1; }
  const float* BackwardGeneral(const float* dout, bool need_din);

  Window2D g_;
  kernels::Window kg_;
  int filters_;
  int groups_;
  Activation act_;
  bool use_bias_;
  Initializer kernel_init_, bias_init_;
  Regularizer kernel_regularizer_, bias_regularizer_;  // Keras' kernel_/bias_regularizer

  float* kernel_ = nullptr;  // into the model's buffers
  float* bias_ = nullptr;
  float* dkernel_ = nullptr;
  float* dbias_ = nullptr;

  const float* x_ = nullptr;  // the input of the last training Forward
  int batch_ = 0;
  std::vector<float> out_, pre_, dact_, dpre_, din_, scratch_;
  bool forward_scratch_ = false;  // scratch_ holds what the last (training) ConvForward left
};

}  // namespace ringtrain::nn
