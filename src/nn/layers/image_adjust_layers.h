// Keras 3's RandomBrightness and RandomContrast (keras/src/layers/preprocessing/
// image_preprocessing/random_brightness.py, random_contrast.py) on [height, width,
// channels] images; inference is the identity. One draw per example from the
// augmentation layers' streams (nn/layers/augment_common.h):
//   RandomBrightness  factor (required): a number f in [-1, 1] -> U(-|f|, |f|), or
//     [lower, upper]; value_range [0, 255]; seed. y = clip(x + U * (hi - lo), lo, hi).
//   RandomContrast    factor (required): a number f in [0, 1] -> (lower, upper) = (0, f)
//     as Keras 3's base layer sets it, or [lower, upper] (sorted; lower <= 1, upper >= 0);
//     value_range [0, 255]; seed. c = U(1 - lower, 1 + upper); per channel the mean m of
//     the example (over the height, then the width), y = clip((x - m) * c + m, lo, hi).
// tf.keras 2.x differed: its RandomContrast read a number f as [1 - f, 1 + f] and
// neither layer's contrast clipped to a value_range (RandomContrast had none); a config
// here is read as Keras 3 reads it. Gradients: TensorFlow's clip_by_value passes the
// gradient where lo <= t <= hi; through the mean for RandomContrast.
// Their ops are kRandomBrightness and kRandomContrast; the CPU backend's kernels are
// backends/cpu/image_adjust_kernels.cc.
#pragma once

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "nn/layer.h"

namespace ringtrain::nn {

class ImageAdjust final : public Layer {
 public:
  static StatusOr<std::unique_ptr<Layer>> CreateBrightness(const nlohmann::json& j, std::string name, const Shape& in,
                                                           const std::string& ctx);
  static StatusOr<std::unique_ptr<Layer>> CreateContrast(const nlohmann::json& j, std::string name, const Shape& in,
                                                         const std::string& ctx);
  const char* type() const override { return contrast_ ? "random_contrast" : "random_brightness"; }
  const char* class_name() const override { return contrast_ ? "RandomContrast" : "RandomBrightness"; }
  ops::Op op() const override { return op_; }

 private:
  ImageAdjust(std::string name, const Shape& in, bool contrast, ops::Op op)
      : Layer(std::move(name), in, in), contrast_(contrast), op_(std::move(op)) {}
  bool contrast_;
  ops::Op op_;
};

}  // namespace ringtrain::nn
