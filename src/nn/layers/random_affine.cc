#include "nn/layers/random_affine.h"

#include <cmath>
#include <cstring>

#include "nn/layers/augment_common.h"
#include "nn/keras/json_fields.h"

namespace ringtrain::nn {

RandomAffine::RandomAffine(std::string name, const Shape& in, bool rotation)
    : Layer(std::move(name), in, in), rotation_(rotation) {
  sampler_.height = in[0];
  sampler_.width = in[1];
  sampler_.channels = in[2];
}

StatusOr<std::unique_ptr<Layer>> RandomAffine::CreateTranslation(const nlohmann::json& j, std::string name,
                                                                 const Shape& in, const std::string& ctx) {
  RT_RETURN_IF_ERROR(CheckKnownFields(j, {"type", "name", "height_factor", "width_factor", "fill_mode",
                                          "interpolation", "seed", "fill_value"}, ctx));
  RT_RETURN_IF_ERROR(augment::CheckImageInput(in, "RandomTranslation", ctx));
  std::unique_ptr<RandomAffine> l(new RandomAffine(std::move(name), in, false));
  RT_ASSIGN_OR_RETURN(l->height_, augment::GetFactor(j, "height_factor", ctx));
  RT_ASSIGN_OR_RETURN(l->width_, augment::GetFactor(j, "width_factor", ctx));
  return Finish(std::move(l), j, ctx);
}

StatusOr<std::unique_ptr<Layer>> RandomAffine::CreateRotation(const nlohmann::json& j, std::string name,
                                                              const Shape& in, const std::string& ctx) {
  RT_RETURN_IF_ERROR(
      CheckKnownFields(j, {"type", "name", "factor", "fill_mode", "interpolation", "seed", "fill_value"}, ctx));
  RT_RETURN_IF_ERROR(augment::CheckImageInput(in, "RandomRotation", ctx));
  std::unique_ptr<RandomAffine> l(new RandomAffine(std::move(name), in, true));
  RT_ASSIGN_OR_RETURN(l->angle_, augment::GetFactor(j, "factor", ctx));
  return Finish(std::move(l), j, ctx);
}

StatusOr<std::unique_ptr<Layer>> RandomAffine::Finish(std::unique_ptr<RandomAffine> l, const nlohmann::json& j,
                                                      const std::string& ctx) {
  RT_ASSIGN_OR_RETURN(l->sampler_.fill_mode, GetFillMode(j, ctx));
  RT_ASSIGN_OR_RETURN(l->sampler_.interpolation, GetInterpolation(j, ctx));
  RT_ASSIGN_OR_RETURN(double fill, GetNumber(j, "fill_value", 0.0, -3.4e38, false, 3.4e38, false, ctx));
  l->fill_value_ = static_cast<float>(fill);
  RT_ASSIGN_OR_RETURN(l->key_, augment::LayerKey(j, l->name(), ctx));
  l->fill_row_.assign(static_cast<size_t>(l->sampler_.channels), l->fill_value_);
  l->sink_.assign(static_cast<size_t>(l->sampler_.channels), 0.0f);
  return std::unique_ptr<Layer>(std::move(l));
}

ops::Op RandomAffine::op() const {
  ops::Op op;
  op.kind = rotation_ ? ops::OpKind::kRandomRotation : ops::OpKind::kRandomTranslation;
  op.key = key_;
  op.height_factor_lo = height_.first;
  op.height_factor_hi = height_.second;
  op.width_factor_lo = width_.first;
  op.width_factor_hi = width_.second;
  op.angle_factor_lo = angle_.first;
  op.angle_factor_hi = angle_.second;
  switch (sampler_.fill_mode) {
    case FillMode::kReflect:
      op.fill_mode = ops::Op::FillMode::kReflect;
      break;
    case FillMode::kWrap:
      op.fill_mode = ops::Op::FillMode::kWrap;
      break;
    case FillMode::kConstant:
      op.fill_mode = ops::Op::FillMode::kConstant;
      break;
    case FillMode::kNearest:
      op.fill_mode = ops::Op::FillMode::kNearest;
      break;
  }
  op.interpolation = sampler_.interpolation == Interpolation::kNearest ? ops::Op::Interpolation::kNearest
                                                                       : ops::Op::Interpolation::kBilinear;
  op.fill_value = fill_value_;
  return op;
}

void RandomAffine::DrawTransform(int64_t example, float* t) const {
  Rng rng = augment::ExampleRng(context(), key_, example);
  const float h = static_cast<float>(sampler_.height), w = static_cast<float>(sampler_.width);
  if (!rotation_) {
    // Keras: translations = [U(width) * W, U(height) * H], drawn height first;
    // matrix [1, 0, -dx, 0, 1, -dy, 0, 0].
    const float dy = augment::UniformIn(rng, height_.first, height_.second) * h;
    const float dx = augment::UniformIn(rng, width_.first, width_.second) * w;
    const float m[8] = {1, 0, -dx, 0, 1, -dy, 0, 0};
    std::memcpy(t, m, sizeof(m));
    return;
  }
  // Keras: angle = U(lower * 2pi, upper * 2pi) in float; cos/sin in float.
  constexpr double kTwoPi = 6.283185307179586;
  const float angle = augment::UniformIn(rng, angle_.first * kTwoPi, angle_.second * kTwoPi);
  const float c = std::cos(angle), s = std::sin(angle);
  const float x_off = ((w - 1) - (c * (w - 1) - s * (h - 1))) / 2.0f;
  const float y_off = ((h - 1) - (s * (w - 1) + c * (h - 1))) / 2.0f;
  const float m[8] = {c, -s, x_off, s, c, y_off, 0, 0};
  std::memcpy(t, m, sizeof(m));
}

const float* RandomAffine::Forward(const float* in, int batch, bool training) {
  if (!training) return in;  // Keras: the identity at inference
  const size_t n = static_cast<size_t>(input_size());
  float* out = EnsureSize(out_, static_cast<size_t>(batch) * n);
  float* t = EnsureSize(transforms_, static_cast<size_t>(batch) * 8);
  for (int b = 0; b < batch; ++b) {
    DrawTransform(b, t + static_cast<size_t>(b) * 8);
    sampler_.Forward(t + static_cast<size_t>(b) * 8, in + b * n, fill_row_.data(), out + b * n);
  }
  batch_ = batch;
  return out;
}

const float* RandomAffine::Backward(const float* dout, bool need_din) {
  if (!need_din) return nullptr;
  const size_t n = static_cast<size_t>(input_size());
  float* din = EnsureSize(din_, static_cast<size_t>(batch_) * n);
  std::memset(din, 0, static_cast<size_t>(batch_) * n * sizeof(float));
  for (int b = 0; b < batch_; ++b) {
    sampler_.AddAdjoint(transform(b), dout + b * n, din + b * n, sink_.data());
  }
  return din;
}

}  // namespace ringtrain::nn
