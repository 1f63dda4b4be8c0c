// The activation layers, elementwise over any input shape (Softmax over the last axis):
//   Activation  {"activation": name}                          any of ops/activation.h
//   ReLU        max_value (null), negative_slope (0), threshold (0), Keras' relu:
//                 y = min(x > threshold ? x : 0, max_value) + negative_slope * min(x - threshold, 0)
//               (the positive part is max(x, 0) when threshold is 0)
//   LeakyReLU   negative_slope (Keras 3) or alpha (tf.keras 2 and tfjs), default 0.3
//   Softmax     axis -1 only
// No weights. Their op is kActivation (op.relu holds ReLU's and LeakyReLU's arguments);
// the CPU backend's kernel is backends/cpu/activation_kernel.cc.
#pragma once

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "nn/keras/json_fields.h"
#include "nn/layer.h"

namespace ringtrain::nn {

class ActivationLayer final : public Layer {
 public:
  static StatusOr<std::unique_ptr<Layer>> CreateActivation(const nlohmann::json& j, std::string name, const Shape& in,
                                                           const std::string& ctx);
  static StatusOr<std::unique_ptr<Layer>> CreateReLU(const nlohmann::json& j, std::string name, const Shape& in,
                                                     const std::string& ctx);
  static StatusOr<std::unique_ptr<Layer>> CreateLeakyReLU(const nlohmann::json& j, std::string name, const Shape& in,
                                                          const std::string& ctx);
  static StatusOr<std::unique_ptr<Layer>> CreateSoftmax(const nlohmann::json& j, std::string name, const Shape& in,
                                                        const std::string& ctx);

  const char* type() const override { return type_; }
  const char* class_name() const override { return class_name_; }
  ops::Op op() const override;

 private:
  // ReLU's arguments; used when `generic_relu_`.
  struct Relu {
    bool has_max = false;
    float max_value = 0.0f;
    float negative_slope = 0.0f;
    float threshold = 0.0f;
  };
  ActivationLayer(const char* type, const char* class_name, std::string name, const Shape& in, Activation act,
                  bool generic_relu, Relu relu);

  const char* type_;
  const char* class_name_;
  Activation act_;
  bool generic_relu_;
  Relu relu_;
};

}  // namespace ringtrain::nn
