// random_zoom: Keras 3's RandomZoom (keras/src/layers/preprocessing/image_preprocessing/
// random_zoom.py) on [height, width, channels] images; inference is the identity.
// Arguments: height_factor (required: a number f in [-1, 1] means [-|f|, |f|], or
// [lower, upper]), width_factor (null: the width zooms as the height), fill_mode
// ("reflect"), interpolation ("bilinear"), fill_value (0.0), seed. Per example, drawn
// height first: hz = U(1 + lower, 1 + upper), wz likewise (or hz), and the image is
// sampled through [wz, 0, ((W - 1) / 2) (1 - wz), 0, hz, ((H - 1) / 2) (1 - hz), 0, 0]
// (backends/cpu/image_transform.h): a positive factor zooms out, a negative one in.
// Its op is kRandomZoom; the CPU backend's kernel is backends/cpu/random_zoom_kernel.cc.
#pragma once

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "nn/layer.h"

namespace ringtrain::nn {

class RandomZoom final : public Layer {
 public:
  static StatusOr<std::unique_ptr<Layer>> Create(const nlohmann::json& j, std::string name, const Shape& in,
                                                 const std::string& ctx);
  const char* type() const override { return "random_zoom"; }
  const char* class_name() const override { return "RandomZoom"; }
  ops::Op op() const override { return op_; }

 private:
  RandomZoom(std::string name, const Shape& in, ops::Op op) : Layer(std::move(name), in, in), op_(std::move(op)) {}
  ops::Op op_;
};

}  // namespace ringtrain::nn
