// Keras' RandomFlip over NHWC images. Arguments: mode ("horizontal_and_vertical", the
// default; "horizontal" or "vertical"), seed (null). Training Forward flips each example
// left-right with probability 1/2 (modes with "horizontal") and, independently, upside
// down with probability 1/2 (modes with "vertical"), drawn from the example's own
// stream (nn/layers/augment_common.h; horizontal first): tf.keras 2's behaviour, four outcomes.
// Keras 3 draws once per example for "horizontal_and_vertical" and flips both ways or
// neither (two outcomes); the documented "horizontally and/or vertically" is followed
// here. Inference Forward is the identity
// (returns `in`). Backward applies the same flips to the gradient (a flip is its own
// adjoint). No weights.
//
// Threading: one thread at a time (Layer). Allocates nothing after the first call with
// a batch size.
#pragma once

#include <memory>
#include <string>
#include <vector>

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
  const float* Forward(const float* in, int batch, bool training) override;
  const float* Backward(const float* dout, bool need_din) override;
  ops::Op op() const override;

  // Bit 0: example i was flipped left-right, bit 1: upside down (last training Forward).
  int flips(int i) const { return flips_[static_cast<size_t>(i)]; }

 private:
  RandomFlip(std::string name, const Shape& in, bool horizontal, bool vertical, uint64_t key);
  void Apply(const float* src, int batch, float* dst) const;

  bool horizontal_, vertical_;
  uint64_t key_;
  int batch_ = 0;
  std::vector<int> flips_;
  std::vector<float> out_, din_;
};

}  // namespace ringtrain::nn
