#include "nn/layers/random_zoom.h"

#include <cmath>

#include "nn/keras/json_fields.h"
#include "nn/layers/augment_common.h"

namespace ringtrain::nn {

StatusOr<std::unique_ptr<Layer>> RandomZoom::Create(const nlohmann::json& j, std::string name, const Shape& in,
                                                    const std::string& ctx) {
  RT_RETURN_IF_ERROR(CheckKnownFields(
      j, {"type", "name", "height_factor", "width_factor", "fill_mode", "interpolation", "fill_value", "seed"}, ctx));
  RT_RETURN_IF_ERROR(augment::CheckImageInput(in, "RandomZoom", ctx));
  ops::Op op;
  op.kind = ops::OpKind::kRandomZoom;
  RT_ASSIGN_OR_RETURN(op.key, augment::LayerKey(j, name, ctx));
  RT_ASSIGN_OR_RETURN(auto h, augment::GetFactor(j, "height_factor", ctx));
  op.height_factor_lo = h.first;
  op.height_factor_hi = h.second;
  if (j.contains("width_factor") && !j["width_factor"].is_null()) {
    RT_ASSIGN_OR_RETURN(auto w, augment::GetFactor(j, "width_factor", ctx));
    op.width_factor_lo = w.first;
    op.width_factor_hi = w.second;
  } else {
    op.zoom_same_aspect = true;
  }
  RT_ASSIGN_OR_RETURN(op.fill_mode, augment::GetFillMode(j, ctx));
  RT_ASSIGN_OR_RETURN(op.interpolation, augment::GetInterpolation(j, ctx));
  RT_ASSIGN_OR_RETURN(double fill, GetNumber(j, "fill_value", 0.0, -3.4e38, false, 3.4e38, false, ctx));
  op.fill_value = static_cast<float>(fill);
  return std::unique_ptr<Layer>(new RandomZoom(std::move(name), in, std::move(op)));
}

}  // namespace ringtrain::nn
