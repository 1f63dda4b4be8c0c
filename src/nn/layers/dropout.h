// Dropout (Keras 3 and tf.keras 2): in training each element is zeroed with probability
// `rate` and the kept ones scaled by 1 / (1 - rate); inference and rate 0 are the
// identity. The kernels: backends/cpu/dropout_kernel.cc, backends/cuda/random_kernels.h.
//
// The mask is a pure function of (the job's seed, the step, the replica, a hash of the
// layer's name, the layer's own "seed" argument, the element's index)
// (backends/cpu/augment_draws.h), so the same bits whatever the thread count, and a
// resumed run draws what an uninterrupted one would.
// Threading: one thread at a time (layer.h).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "nn/layer.h"

namespace ringtrain::nn {

class Dropout final : public Layer {
 public:
  // Keras' arguments: rate (required, in [0, 1)), noise_shape (null only), seed (an
  // integer or null: mixed into the stream).
  static StatusOr<std::unique_ptr<Layer>> Create(const nlohmann::json& j, std::string name, const Shape& in,
                                                 const std::string& ctx);

  const char* type() const override { return "dropout"; }
  const char* class_name() const override { return "Dropout"; }
  ops::Op op() const override;

 private:
  Dropout(std::string name, const Shape& in, double rate, uint64_t layer_seed);

  const float rate_;
  const float scale_;  // 1 / (1 - rate): 1 - rate rounded to float, then inverted in float, as TensorFlow.js
  const uint64_t name_hash_, layer_seed_;
};

}  // namespace ringtrain::nn
