#include "nn/layers/image_adjust_layers.h"

#include <algorithm>
#include <cmath>

#include "nn/keras/json_fields.h"
#include "nn/layers/augment_common.h"

namespace ringtrain::nn {
namespace {

// "value_range": [low, high] of finite numbers (sorted, as Keras), default [0, 255].
Status GetAdjustValueRange(const nlohmann::json& j, const std::string& ctx, ops::Op* op) {
  auto v = j.find("value_range");
  if (v == j.end()) return Status::Ok();
  const bool ok = v->is_array() && v->size() == 2 && (*v)[0].is_number() && (*v)[1].is_number() &&
                  std::isfinite((*v)[0].get<double>()) && std::isfinite((*v)[1].get<double>());
  if (!ok) {
    return InvalidArgumentError(ctx + ": 'value_range' must be a list of two numbers [low, high], got " + BriefDump(*v));
  }
  const double a = (*v)[0].get<double>(), b = (*v)[1].get<double>();
  op->value_lo = static_cast<float>(std::min(a, b));
  op->value_hi = static_cast<float>(std::max(a, b));
  return Status::Ok();
}

StatusOr<ops::Op> AdjustCommon(const nlohmann::json& j, const std::string& name, const Shape& in, const char* cls,
                         ops::OpKind kind, const std::string& ctx) {
  RT_RETURN_IF_ERROR(CheckKnownFields(j, {"type", "name", "factor", "value_range", "seed"}, ctx));
  RT_RETURN_IF_ERROR(augment::CheckImageInput(in, cls, ctx));
  ops::Op op;
  op.kind = kind;
  RT_ASSIGN_OR_RETURN(op.key, augment::LayerKey(j, name, ctx));
  RT_RETURN_IF_ERROR(GetAdjustValueRange(j, ctx, &op));
  if (!j.contains("factor")) return InvalidArgumentError(ctx + ": missing 'factor' (a number, or [lower, upper])");
  return op;
}

}  // namespace

StatusOr<std::unique_ptr<Layer>> ImageAdjust::CreateBrightness(const nlohmann::json& j, std::string name,
                                                               const Shape& in, const std::string& ctx) {
  RT_ASSIGN_OR_RETURN(ops::Op op, AdjustCommon(j, name, in, "RandomBrightness", ops::OpKind::kRandomBrightness, ctx));
  RT_ASSIGN_OR_RETURN(auto range, augment::GetFactor(j, "factor", ctx));
  op.adjust_lo = range.first;
  op.adjust_hi = range.second;
  return std::unique_ptr<Layer>(new ImageAdjust(std::move(name), in, false, std::move(op)));
}

StatusOr<std::unique_ptr<Layer>> ImageAdjust::CreateContrast(const nlohmann::json& j, std::string name,
                                                             const Shape& in, const std::string& ctx) {
  RT_ASSIGN_OR_RETURN(ops::Op op, AdjustCommon(j, name, in, "RandomContrast", ops::OpKind::kRandomContrast, ctx));
  const nlohmann::json& f = j["factor"];
  double lower = 0, upper = 0;
  const std::string help = "'factor' must be a number in [0, 1] or a list [lower, upper] with lower <= 1 and "
                           "upper >= 0 (the contrast factor is drawn from [1 - lower, 1 + upper]), got " + BriefDump(f);
  if (f.is_number()) {
    const double v = f.get<double>();
    if (!(v >= 0 && v <= 1)) return InvalidArgumentError(ctx + ": " + help);
    upper = v;  // Keras 3's base layer: (max(-f, 0), f)
  } else if (f.is_array() && f.size() == 2 && f[0].is_number() && f[1].is_number() &&
             std::isfinite(f[0].get<double>()) && std::isfinite(f[1].get<double>())) {
    lower = std::min(f[0].get<double>(), f[1].get<double>());
    upper = std::max(f[0].get<double>(), f[1].get<double>());
    if (f[0].get<double>() > 1 || f[1].get<double>() < 0) return InvalidArgumentError(ctx + ": " + help);
  } else {
    return InvalidArgumentError(ctx + ": " + help);
  }
  op.adjust_lo = 1.0 - lower;
  op.adjust_hi = 1.0 + upper;
  return std::unique_ptr<Layer>(new ImageAdjust(std::move(name), in, true, std::move(op)));
}

}  // namespace ringtrain::nn
