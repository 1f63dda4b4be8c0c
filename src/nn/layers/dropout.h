// Dropout (Keras 3 and tf.keras 2): in a training Forward each element is zeroed with
// probability `rate` and the kept ones scaled by 1 / (1 - rate); inference and rate 0
// are the identity (the input pointer passes through).
//
// The mask is a pure function of (the job's seed, the step, the replica, a hash of the
// layer's name, the layer's own "seed" argument, the element's index): SplitMix64's
// output function over a counter, so the same bits whatever the thread count, and a
// resumed run draws what an uninterrupted one would. Keras' own stream differs (it is
// TensorFlow's RNG), so masks match Keras in distribution, not bit for bit.
// Threading: one thread at a time (layer.h).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

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
  const float* Forward(const float* in, int batch, bool training) override;
  const float* Backward(const float* dout, bool need_din) override;
  ops::Op op() const override;
  uint64_t ScratchFloatsPerExample(bool training) const override;

  // The keep decision for element `index` of the stream `key` (exposed for tests).
  static uint64_t StreamKey(uint64_t seed, int64_t step, int replica, uint64_t layer_hash, uint64_t layer_seed);
  static bool Keep(uint64_t key, uint64_t index, float rate);

 private:
  Dropout(std::string name, const Shape& in, double rate, uint64_t layer_seed);

  const float rate_;
  const float scale_;  // 1 / (1 - rate): 1 - rate rounded to float, then inverted in float, as TensorFlow.js
  const uint64_t name_hash_, layer_seed_;
  bool masked_ = false;     // the last Forward applied a mask (training, rate > 0)
  size_t batch_elements_ = 0;  // elements of the last masked Forward
  std::vector<float> mask_;  // 0 or scale_ per element, of the last masked Forward
  std::vector<float> out_, din_;
};

}  // namespace ringtrain::nn
