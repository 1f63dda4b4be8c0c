#include "nn/layers/random_flip.h"

#include <cstring>

#include "nn/layers/augment_common.h"
#include "nn/keras/json_fields.h"

namespace ringtrain::nn {

StatusOr<std::unique_ptr<Layer>> RandomFlip::Create(const nlohmann::json& j, std::string name, const Shape& in,
                                                    const std::string& ctx) {
  RT_RETURN_IF_ERROR(CheckKnownFields(j, {"type", "name", "mode", "seed"}, ctx));
  RT_RETURN_IF_ERROR(augment::CheckImageInput(in, "RandomFlip", ctx));
  bool horizontal = true, vertical = true;
  if (auto it = j.find("mode"); it != j.end()) {
    if (*it == "horizontal") {
      vertical = false;
    } else if (*it == "vertical") {
      horizontal = false;
    } else if (*it != "horizontal_and_vertical") {
      return InvalidArgumentError(ctx + ": 'mode' must be \"horizontal_and_vertical\" (the default), \"horizontal\" "
                                  "or \"vertical\", got " + BriefDump(*it));
    }
  }
  RT_ASSIGN_OR_RETURN(uint64_t key, augment::LayerKey(j, name, ctx));
  return std::unique_ptr<Layer>(new RandomFlip(std::move(name), in, horizontal, vertical, key));
}

RandomFlip::RandomFlip(std::string name, const Shape& in, bool horizontal, bool vertical, uint64_t key)
    : Layer(std::move(name), in, in), horizontal_(horizontal), vertical_(vertical), key_(key) {}

ops::Op RandomFlip::op() const {
  ops::Op op;
  op.kind = ops::OpKind::kRandomFlip;
  op.key = key_;
  op.flip_horizontal = horizontal_;
  op.flip_vertical = vertical_;
  op.detail = std::string(horizontal_ ? "horizontal" : "") + (horizontal_ && vertical_ ? "_and_" : "") +
              (vertical_ ? "vertical" : "");
  return op;
}

// dst = the flips of src, per example (flips_ says which).
void RandomFlip::Apply(const float* src, int batch, float* dst) const {
  const Shape& s = input_shape();
  const int64_t h = s[0], w = s[1], c = s[2], n = h * w * c;
  for (int b = 0; b < batch; ++b) {
    const int f = flips_[static_cast<size_t>(b)];
    const float* x = src + b * n;
    float* y = dst + b * n;
    for (int64_t r = 0; r < h; ++r) {
      const float* row = x + ((f & 2) ? h - 1 - r : r) * w * c;
      float* out = y + r * w * c;
      if (!(f & 1)) {
        std::memcpy(out, row, static_cast<size_t>(w * c) * sizeof(float));
        continue;
      }
      for (int64_t col = 0; col < w; ++col) {
        const float* src_px = row + (w - 1 - col) * c;
        float* dst_px = out + col * c;
        for (int64_t k = 0; k < c; ++k) dst_px[k] = src_px[k];
      }
    }
  }
}

const float* RandomFlip::Forward(const float* in, int batch, bool training) {
  if (!training) return in;  // Keras: the identity at inference
  EnsureSize(flips_, static_cast<size_t>(batch));
  for (int b = 0; b < batch; ++b) {
    Rng rng = augment::ExampleRng(context(), key_, b);
    int f = 0;
    // Each direction the mode names flips with probability 1/2 (Keras: uniform() <= 0.5).
    if (horizontal_ && rng.Uniform() < 0.5f) f |= 1;
    if (vertical_ && rng.Uniform() < 0.5f) f |= 2;
    flips_[static_cast<size_t>(b)] = f;
  }
  float* out = EnsureSize(out_, static_cast<size_t>(batch) * input_size());
  Apply(in, batch, out);
  batch_ = batch;
  return out;
}

const float* RandomFlip::Backward(const float* dout, bool need_din) {
  if (!need_din) return nullptr;
  float* din = EnsureSize(din_, static_cast<size_t>(batch_) * input_size());
  Apply(dout, batch_, din);
  return din;
}

}  // namespace ringtrain::nn
