#include "nn/layers/reshape_flatten.h"

#include <limits>

#include "nn/keras/json_fields.h"

namespace ringtrain::nn {

StatusOr<std::unique_ptr<Layer>> ShapeView::CreateReshape(const nlohmann::json& j, std::string name, const Shape& in,
                                                          const std::string& ctx) {
  RT_RETURN_IF_ERROR(CheckKnownFields(j, {"type", "name", "target_shape"}, ctx));
  auto it = j.find("target_shape");
  if (it == j.end()) {
    return InvalidArgumentError(ctx + ": missing 'target_shape' (per-example shape, e.g. [28, 28, 1])");
  }
  auto bad = [&](const std::string& why) {
    return InvalidArgumentError(ctx + ": 'target_shape' " + why + ", got " + BriefDump(*it));
  };
  if (!it->is_array() || it->empty() || it->size() > 8) {
    return bad("must be a non-empty array of positive integers (one may be -1)");
  }
  Shape out;
  int infer_at = -1;
  int64_t known = 1;
  for (const auto& d : *it) {
    if (!d.is_number_integer()) return bad("must be a non-empty array of positive integers (one may be -1)");
    int64_t v = d.get<int64_t>();
    if (v == -1 && infer_at < 0) {
      infer_at = static_cast<int>(out.size());
      out.push_back(1);
      continue;
    }
    if (v <= 0 || v > std::numeric_limits<int>::max()) {
      return bad("must be a non-empty array of positive integers (one may be -1)");
    }
    known *= v;
    if (known > std::numeric_limits<int>::max()) return bad("is too large");
    out.push_back(static_cast<int>(v));
  }
  const int64_t total = NumElements(in);
  if (infer_at >= 0) {
    if (total % known != 0) {
      return bad("cannot be filled from an input of shape " + ShapeToString(in) + " (" + std::to_string(total) +
                 " values)");
    }
    out[infer_at] = static_cast<int>(total / known);
  } else if (known != total) {
    return bad("has " + std::to_string(known) + " values but the input " + ShapeToString(in) + " has " +
               std::to_string(total));
  }
  return std::unique_ptr<Layer>(new ShapeView(std::move(name), in, out, false));
}

StatusOr<std::unique_ptr<Layer>> ShapeView::CreateFlatten(const nlohmann::json& j, std::string name, const Shape& in,
                                                          const std::string& ctx) {
  RT_RETURN_IF_ERROR(CheckKnownFields(j, {"type", "name"}, ctx));
  return std::unique_ptr<Layer>(
      new ShapeView(std::move(name), in, Shape{static_cast<int>(NumElements(in))}, true));
}

}  // namespace ringtrain::nn
