// normalization: Keras' Normalization preprocessing layer,
//   y = (x - mean) / max(sqrt(variance), 1e-7)       (invert false, the default)
//   y = mean + x * max(sqrt(variance), 1e-7)         (invert true)
// with 1e-7 Keras' backend.epsilon(), mean and variance broadcast over the axes not
// kept. Arguments, as Keras 3 (and tf.keras 2.9+) write them:
//   axis      -1 (default): the axes that keep their own mean and variance, in Keras'
//             numbering (the batch is 0, and cannot be kept here: ringtrain's batch size is
//             not fixed); an int, a list of ints, or null (one mean and variance for all)
//   mean, variance  both or neither: a number, or a (nested) list whose shape, aligned to
//             the kept axes from the right, broadcasts to theirs (as Keras' build does);
//             variance >= 0
//   invert    false
// Without mean and variance the layer has Keras' non-trainable weights "mean" and
// "variance" (the kept axes' shape; initially 0 and 1) and "count" (a scalar, unused),
// which initial_weights loads from a Keras model's converted weights. adapt() is not
// supported: a model without them in its config trains with the loaded values (or 0 and 1).
// Its op is kNormalization; the CPU backend's kernel is backends/cpu/normalization_kernel.cc.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "nn/layer.h"

namespace ringtrain::nn {

class Normalization final : public Layer {
 public:
  static StatusOr<std::unique_ptr<Layer>> Create(const nlohmann::json& j, std::string name, const Shape& in,
                                                 const std::string& ctx);

  const char* type() const override { return "normalization"; }
  const char* class_name() const override { return "Normalization"; }
  std::vector<ParamSpec> ParamSpecs() const override;
  ops::Op op() const override;

  // Keras' backend.epsilon(), the floor of the standard deviation.
  static constexpr float kEpsilon = 1e-7f;

 private:
  Normalization(std::string name, const Shape& in) : Layer(std::move(name), in, in) {}

  std::vector<int64_t> kept_shape_;  // the kept axes' sizes, in axis order
  int64_t kept_size_ = 1;
  std::vector<int32_t> index_;      // per example element: its kept element (empty: j % kept_size_)
  std::vector<float> mean_, variance_;  // from the config, kept_size_ each; empty: the weights
  bool invert_ = false;
};

}  // namespace ringtrain::nn
