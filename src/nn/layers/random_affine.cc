#include "nn/layers/random_affine.h"

#include "nn/layers/augment_common.h"
#include "nn/keras/json_fields.h"

namespace ringtrain::nn {

RandomAffine::RandomAffine(std::string name, const Shape& in, bool rotation)
    : Layer(std::move(name), in, in), rotation_(rotation) {}

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
  RT_ASSIGN_OR_RETURN(l->fill_mode_, augment::GetFillMode(j, ctx));
  RT_ASSIGN_OR_RETURN(l->interpolation_, augment::GetInterpolation(j, ctx));
  RT_ASSIGN_OR_RETURN(double fill, GetNumber(j, "fill_value", 0.0, -3.4e38, false, 3.4e38, false, ctx));
  l->fill_value_ = static_cast<float>(fill);
  RT_ASSIGN_OR_RETURN(l->key_, augment::LayerKey(j, l->name(), ctx));
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
  op.fill_mode = fill_mode_;
  op.interpolation = interpolation_;
  op.fill_value = fill_value_;
  return op;
}

}  // namespace ringtrain::nn
