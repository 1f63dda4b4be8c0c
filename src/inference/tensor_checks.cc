#include "inference/tensor_checks.h"

#include <cmath>

namespace ringtrain::inference {

std::string ShapeText(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

Status CheckTensorFinite(const std::string& name, const checkpoint::Tensor& t, const std::string& source,
                         const std::string& advice) {
  for (size_t i = 0; i < t.data.size(); ++i) {
    if (std::isfinite(t.data[i])) continue;
    const char* what = std::isnan(t.data[i]) ? "NaN" : t.data[i] > 0 ? "+infinity" : "-infinity";
    return DataLossError(source + ": tensor '" + name + "' holds " + what + " at index " + std::to_string(i) +
                         " (of " + std::to_string(t.data.size()) + " values); " + advice)
        .About(Subject::kStorage);
  }
  return Status::Ok();
}

}  // namespace ringtrain::inference
