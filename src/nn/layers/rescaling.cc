#include "nn/layers/rescaling.h"

#include <cmath>
#include <limits>

#include "nn/keras/json_fields.h"

namespace ringtrain::nn {
namespace {

// A number, or a list of `channels` numbers; absent -> `fallback` repeated (missing when
// `required`).
StatusOr<std::vector<float>> PerChannel(const nlohmann::json& j, const char* key, bool required, float fallback,
                                        size_t channels, const std::string& ctx) {
  auto it = j.find(key);
  if (it == j.end()) {
    if (required) return InvalidArgumentError(ctx + ": missing '" + key + "' (a number, e.g. 0.00392156862745098)");
    return std::vector<float>(channels, fallback);
  }
  auto finite = [](const nlohmann::json& v) {
    return v.is_number() && std::isfinite(v.get<double>()) &&
           std::abs(v.get<double>()) <= std::numeric_limits<float>::max();
  };
  if (finite(*it)) return std::vector<float>(channels, static_cast<float>(it->get<double>()));
  if (it->is_array() && it->size() == channels) {
    std::vector<float> out;
    for (const auto& v : *it) {
      if (!finite(v)) break;
      out.push_back(static_cast<float>(v.get<double>()));
    }
    if (out.size() == channels) return out;
  }
  return InvalidArgumentError(ctx + ": '" + key + "' must be a finite number or a list of " +
                              std::to_string(channels) + " (one per channel of the input's last axis), got " +
                              BriefDump(*it));
}

}  // namespace

StatusOr<std::unique_ptr<Layer>> Rescaling::Create(const nlohmann::json& j, std::string name, const Shape& in,
                                                   const std::string& ctx) {
  RT_RETURN_IF_ERROR(CheckKnownFields(j, {"type", "name", "scale", "offset"}, ctx));
  const size_t channels = static_cast<size_t>(in.back());
  RT_ASSIGN_OR_RETURN(std::vector<float> scale, PerChannel(j, "scale", true, 1.0f, channels, ctx));
  RT_ASSIGN_OR_RETURN(std::vector<float> offset, PerChannel(j, "offset", false, 0.0f, channels, ctx));
  return std::unique_ptr<Layer>(new Rescaling(std::move(name), in, std::move(scale), std::move(offset)));
}

Rescaling::Rescaling(std::string name, const Shape& in, std::vector<float> scale, std::vector<float> offset)
    : Layer(std::move(name), in, in), scale_(std::move(scale)), offset_(std::move(offset)) {}

ops::Op Rescaling::op() const {
  ops::Op op;
  op.kind = ops::OpKind::kRescaling;
  op.scale_values = scale_;
  op.offset_values = offset_;
  return op;
}

}  // namespace ringtrain::nn
