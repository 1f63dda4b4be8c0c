// dense: Keras Dense on a flat input, kernel [in, units], bias [units].
//   forward   out[N, U] = act(in[N, I] x W[I, U] + b)
//   backward  dW = in^T x dpre,  din = dpre x W^T
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "nn/keras/json_fields.h"
#include "nn/layer.h"
#include "nn/regularizers/regularizer.h"

namespace ringtrain::nn {

class Dense final : public Layer {
 public:
  // Fields: units, activation (linear; any of nn/layers/activations.h), use_bias (true),
  // kernel_initializer ("glorot_uniform"), bias_initializer ("zeros"), and
  // kernel_regularizer / bias_regularizer (null; nn/regularizers/regularizer.h). `in` must be rank 1.
  static StatusOr<std::unique_ptr<Layer>> Create(const nlohmann::json& j, std::string name, const Shape& in,
                                                 const std::string& ctx);

  const char* type() const override { return "dense"; }
  const char* class_name() const override { return "Dense"; }
  std::vector<ParamSpec> ParamSpecs() const override;
  void BindParams(const std::vector<float*>& params, const std::vector<float*>& grads) override;
  const float* Forward(const float* in, int batch, bool training) override;
  const float* Backward(const float* dout, bool need_din) override;
  ops::Op op() const override;
  uint64_t ScratchFloatsPerExample(bool training) const override;

 private:
  Dense(std::string name, int in, int units, Activation act, bool use_bias, const Initializer& kernel_init,
        const Initializer& bias_init);

  // relu and linear run fused in the kernels; the others after them, on pre_.
  bool fused() const { return act_ == Activation::kLinear || act_ == Activation::kRelu; }

  int in_, units_;
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
  std::vector<float> out_, pre_, dpre_, din_, scratch_;
};

}  // namespace ringtrain::nn
