// Keras' RandomCrop over NHWC images: output [height, width, C].
//
// Arguments: height, width (required positive integers), seed (null).
// - Training, input at least height x width: each example is cropped at its own random
//   offset, uniform over the valid offsets (h_start in [0, H - height], w_start in
//   [0, W - width]), drawn from the example's stream (nn/layers/augment_common.h). Keras 3
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
// Backward: the adjoint of what the last training Forward did (the gradient scattered
// back into the window, or through the resize's weights). No weights.
//
// Threading: one thread at a time (Layer). Allocates nothing after the first call with
// a batch size.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

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
  const float* Forward(const float* in, int batch, bool training) override;
  const float* Backward(const float* dout, bool need_din) override;
  ops::Op op() const override;

  // Example i's crop offset in the last training Forward (random path only).
  int h_start(int i) const { return offsets_[2 * static_cast<size_t>(i)]; }
  int w_start(int i) const { return offsets_[2 * static_cast<size_t>(i) + 1]; }

 private:
  // One output row's or column's source along one axis, in TF's resize terms.
  struct Lerp {
    int lower, upper;
    float lerp;
  };
  RandomCrop(std::string name, const Shape& in, int height, int width, uint64_t key);
  void CropAt(const float* x, int h0, int w0, float* y) const;
  void CropAtAdjoint(const float* dy, int h0, int w0, float* dx) const;
  void Resize(const float* x, float* y) const;
  void ResizeAdjoint(const float* dy, float* dx) const;

  int height_, width_, channels_;
  uint64_t key_;
  bool random_ok_;          // input >= target in both dimensions
  int box_h0_, box_w0_;     // the centred window (deterministic path)
  bool box_is_target_;      // the window already has the target size
  std::vector<Lerp> rows_, cols_;
  int batch_ = 0;
  bool last_random_ = false;
  std::vector<int> offsets_;
  std::vector<float> out_, din_;
};

}  // namespace ringtrain::nn
