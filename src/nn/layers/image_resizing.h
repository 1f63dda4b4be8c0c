// image_resizing: Keras' image preprocessing layers Resizing and CenterCrop over NHWC
// input [H, W, C] -> [height, width, C]. Both take a box of the input (all of it, or the
// largest centred box of the target's aspect ratio) and resize it to the output with
// tf.image.resize (half-pixel centres, no antialiasing), as Keras' TensorFlow backend
// computes them; a box already of the output's size is copied. Their ops are kResizing
// and kCenterCrop (window.pad_top, pad_left: the box's first row and column;
// crop_height, crop_width: its size; interpolation); the CPU kernel is in
// backends/cpu/resample_kernels.cc.
//
// Threading: one thread at a time (the owning Model's). Errors: Create returns
// INVALID_ARGUMENT naming the field.
#pragma once

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "nn/layer.h"
#include "ops/op.h"

namespace ringtrain::nn {

// The box of an [h, w] input that Keras' crop_to_aspect_ratio (and smart_resize) keeps for
// a [target_h, target_w] output: the largest centred box of the target's aspect ratio,
// its sides computed in float32 and truncated as TensorFlow does.
struct ResizeBox {
  int top = 0, left = 0, height = 0, width = 0;
};
ResizeBox AspectRatioBox(int h, int w, int target_h, int target_w);

class ImageResizing final : public Layer {
 public:
  // Resizing. Fields: height, width (required); interpolation ("bilinear"): "bilinear"
  // or "nearest"; crop_to_aspect_ratio (false); pad_to_aspect_ratio (false only),
  // fill_mode ("constant") and fill_value (0), which only padding reads; antialias (false
  // only). `in` must be [H, W, C].
  static StatusOr<std::unique_ptr<Layer>> CreateResizing(const nlohmann::json& j, std::string name, const Shape& in,
                                                         const std::string& ctx);
  // CenterCrop. Fields: height, width (required). An input at least as large on both
  // sides is cropped to its centre (the odd cell after); otherwise the aspect-ratio box
  // is resized bilinearly, as Keras does.
  static StatusOr<std::unique_ptr<Layer>> CreateCenterCrop(const nlohmann::json& j, std::string name,
                                                           const Shape& in, const std::string& ctx);

  const char* type() const override { return center_crop_ ? "center_crop" : "resizing"; }
  const char* class_name() const override { return center_crop_ ? "CenterCrop" : "Resizing"; }
  ops::Op op() const override;

 private:
  ImageResizing(std::string name, const Shape& in, int height, int width, bool center_crop, const ResizeBox& box,
                ops::Op::Interpolation interpolation);

  bool center_crop_;
  ResizeBox box_;
  ops::Op::Interpolation interpolation_;
};

}  // namespace ringtrain::nn
