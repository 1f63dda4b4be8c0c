// Keras' RandomCrop over NHWC images: output [height, width, C]. The kernels:
// backends/cpu/augment_kernels.cc, backends/cuda/random_kernels.h.
//
// Arguments: height, width (required positive integers), seed (null).
// - Training, input at least height x width: each example is cropped at its own random
//   offset, uniform over the valid offsets (h_start in [0, H - height], w_start in
//   [0, W - width]), drawn from the example's stream (backends/cpu/augment_draws.h). Keras 3
//   crops a whole batch at one offset; here each example draws its own, so the result
//   does not depend on how the global batch is split over the replicas.
// - Inference, and training with an input smaller than the crop in either dimension:
//   Keras' deterministic path: the largest centred window of the target's aspect ratio
//   (crop_h = min(H, int(W * height / width)), crop_w = min(W, int(H * width / height)),
//   offsets int((H - crop_h) / 2), int((W - crop_w) / 2)), resized to height x width
//   with TF's bilinear resize (half-pixel centres, no antialiasing: tf.image.resize);
//   a window already of the target size is copied as is (a plain centre crop).
//   tf.keras 2 crops at random when the input is >= the target in both dimensions, as
//   here; Keras 3 only when strictly larger (an equal dimension takes the centre path).
// The gradient: the adjoint of what the training pass did (scattered back into the
// window, or through the resize's weights). No weights.
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

class RandomCrop final : public Layer {
 public:
  static StatusOr<std::unique_ptr<Layer>> Create(const nlohmann::json& j, std::string name, const Shape& in,
                                                 const std::string& ctx);

  const char* type() const override { return "random_crop"; }
  const char* class_name() const override { return "RandomCrop"; }
  ops::Op op() const override;

 private:
  RandomCrop(std::string name, const Shape& in, int height, int width, uint64_t key);

  int height_, width_;
  uint64_t key_;
};

}  // namespace ringtrain::nn
