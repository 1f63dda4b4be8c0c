// Keras' RandomFlip over NHWC images. Arguments: mode ("horizontal_and_vertical", the
// default; "horizontal" or "vertical"), seed (null). In training each example is flipped
// left-right with probability 1/2 (modes with "horizontal") and, independently, upside
// down with probability 1/2 (modes with "vertical"), drawn from the example's own
// stream (backends/cpu/augment_draws.h; horizontal first): tf.keras 2's behaviour, four
// outcomes. Keras 3 draws once per example for "horizontal_and_vertical" and flips both
// ways or neither (two outcomes); the documented "horizontally and/or vertically" is
// followed here. Inference is the identity. The gradient takes the same flips (a flip is
// its own adjoint). No weights. The kernels: backends/cpu/augment_kernels.cc,
// backends/cuda/random_kernels.h.
//
// Threading: one thread at a time (Layer).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "nn/layer.h"

namespace ringtrain::nn {

class RandomFlip final : public Layer {
 public:
  static StatusOr<std::unique_ptr<Layer>> Create(const nlohmann::json& j, std::string name, const Shape& in,
                                                 const std::string& ctx);

  const char* type() const override { return "random_flip"; }
  const char* class_name() const override { return "RandomFlip"; }
  ops::Op op() const override;

 private:
  RandomFlip(std::string name, const Shape& in, bool horizontal, bool vertical, uint64_t key);

  bool horizontal_, vertical_;
  uint64_t key_;
};

}  // namespace ringtrain::nn
