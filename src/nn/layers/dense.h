// dense: Keras Dense on a flat input, kernel [in, units], bias [units]:
// out[N, U] = act(in[N, I] x W[I, U] + b). Its op is kDense; the CPU backend's kernel is
// backends/cpu/dense_kernel.cc.
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
  // Fields: units, activation (linear; any of ops/activation.h), use_bias (true),
  // kernel_initializer ("glorot_uniform"), bias_initializer ("zeros"), and
  // kernel_regularizer / bias_regularizer (null; nn/regularizers/regularizer.h). `in` must be rank 1.
  static StatusOr<std::unique_ptr<Layer>> Create(const nlohmann::json& j, std::string name, const Shape& in,
                                                 const std::string& ctx);

  const char* type() const override { return "dense"; }
  const char* class_name() const override { return "Dense"; }
  std::vector<ParamSpec> ParamSpecs() const override;
  ops::Op op() const override;

 private:
  Dense(std::string name, int in, int units, Activation act, bool use_bias, const Initializer& kernel_init,
        const Initializer& bias_init);

  int in_, units_;
  Activation act_;
  bool use_bias_;
  Initializer kernel_init_, bias_init_;
  Regularizer kernel_regularizer_, bias_regularizer_;  // Keras' kernel_/bias_regularizer
};

}  // namespace ringtrain::nn
