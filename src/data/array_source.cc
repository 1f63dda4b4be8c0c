#include "data/array_source.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "common/json.h"
#include "data/entry_fields.h"

namespace ringtrain::data {
namespace {

using entry::Invalid;
using entry::kMaxNumClasses;

using numpy::DType;
using numpy::NpyArray;

Status BadData(const std::string& what) { return InvalidArgumentError(what).About(Subject::kData); }

class ArraySource : public Source {
 public:
  ArraySource(NpyArray x, std::vector<int32_t> labels, ExampleSpec spec, std::optional<float> rescale,
              std::string where)
      : x_(std::move(x)), labels_(std::move(labels)), spec_(std::move(spec)), rescale_(rescale),
        where_(std::move(where)), row_(spec_.size()) {}

  const ExampleSpec& spec() const override { return spec_; }
  int64_t size() const override { return static_cast<int64_t>(labels_.size() / spec_.label_size()); }

  Status Read(int64_t i, float* out, int32_t* label) const override {
    if (i < 0 || i >= size()) return OutOfRange(i);
    const uint64_t base = static_cast<uint64_t>(i) * row_;
    const uint8_t* p = x_.data() + base * numpy::ItemSize(x_.dtype());
    switch (x_.dtype()) {
      case DType::kUint8:
        // The exact expressions of mnist_idx's FromRaw (load_shard.cc) and Keras' Rescaling.
        if (rescale_) {
          const float r = *rescale_;
          for (size_t k = 0; k < row_; ++k) out[k] = static_cast<float>(p[k]) * r;
        } else {
          for (size_t k = 0; k < row_; ++k) out[k] = p[k] / 255.f;
        }
        break;
      case DType::kFloat32:
        std::memcpy(out, p, row_ * sizeof(float));
        if (rescale_) {
          for (size_t k = 0; k < row_; ++k) out[k] *= *rescale_;
        }
        break;
      default:
        for (size_t k = 0; k < row_; ++k) out[k] = static_cast<float>(x_.AsDouble(base + k));
        if (rescale_) {
          for (size_t k = 0; k < row_; ++k) out[k] *= *rescale_;
        }
        break;
    }
    const size_t ls = spec_.label_size();
    std::memcpy(label, labels_.data() + static_cast<size_t>(i) * ls, ls * sizeof(int32_t));
    return Status::Ok();
  }

  StatusOr<int32_t> Label(int64_t i) const override {
    if (i < 0 || i >= size()) return OutOfRange(i);
    return labels_[static_cast<size_t>(i) * spec_.label_size()];
  }

  std::string Where(int64_t i) const override { return where_ + "[" + std::to_string(i) + "]"; }

 private:
  Status OutOfRange(int64_t i) const {
    return InvalidArgumentError(where_ + ": example " + std::to_string(i) + " is out of range [0, " +
                                std::to_string(size()) + ")");
  }

  NpyArray x_;
  std::vector<int32_t> labels_;
  ExampleSpec spec_;
  std::optional<float> rescale_;
  std::string where_;
  size_t row_;
};

}  // namespace

Status ParseArrayOptions(const nlohmann::json& s, const std::string& field, ArrayOptions* out) {
  if (s.contains("num_classes")) {
    const std::optional<int64_t> n = JsonInt(s["num_classes"], 1, kMaxNumClasses);
    if (!n) {
      return Invalid(field + ".num_classes", "must be an integer in [1, " + std::to_string(kMaxNumClasses) + "], got " +
                                                 JsonBrief(s["num_classes"]));
    }
    out->num_classes = static_cast<int>(*n);
  }
  if (s.contains("label_mode")) {
    const auto& m = s["label_mode"];
    if (!m.is_string() || (m.get<std::string>() != "int" && m.get<std::string>() != "categorical")) {
      return Invalid(field + ".label_mode", "must be \"int\" or \"categorical\", got " + JsonBrief(m));
    }
    out->categorical = m.get<std::string>() == "categorical";
  }
  if (s.contains("rescale")) {
    const std::optional<double> r = JsonNumber(s["rescale"]);
    if (!r || !std::isfinite(static_cast<float>(*r))) {
      return Invalid(field + ".rescale", "must be a finite number (e.g. 0.00392156862745098 for 1/255), got " +
                                             JsonBrief(s["rescale"]));
    }
    out->rescale = static_cast<float>(*r);
  }
  return Status::Ok();
}

StatusOr<std::unique_ptr<Source>> MakeArraySource(NpyArray x, const NpyArray& y, const ArrayOptions& options,
                                                  const std::string& where) {
  const auto& xs = x.shape();
  const auto& ys = y.shape();
  if (xs.size() < 2) {
    return BadData(x.name() + " has shape " + numpy::ShapeString(xs) +
                   "; x must be an array of examples of shape (N, ...) with at least 2 dimensions, e.g. (N, 28, 28)");
  }
  if (ys.empty()) {
    return BadData(y.name() + " is a scalar; y must hold the N examples' labels: shape (N,) for a class index each, "
                   "(N, ...) for several integer labels each (per pixel, multi-hot)");
  }
  if (!numpy::IsInteger(y.dtype()) || y.dtype() == DType::kBool) {
    return BadData(y.name() + " has dtype " + numpy::DTypeName(y.dtype()) +
                   "; labels must be integers (uint8, int32 or int64): y.astype(np.int64)");
  }
  if (xs[0] != ys[0]) {
    return BadData(x.name() + " holds " + std::to_string(xs[0]) + " examples but " + y.name() + " holds " +
                   std::to_string(ys[0]) + " labels; they must be the same length");
  }
  if (xs[0] == 0) return BadData(x.name() + " holds no examples (shape " + numpy::ShapeString(xs) + ")");
  ExampleSpec spec;
  for (size_t k = 1; k < xs.size(); ++k) {
    if (xs[k] < 1 || xs[k] > std::numeric_limits<int>::max()) {
      return BadData(x.name() + " has shape " + numpy::ShapeString(xs) + "; every example dimension must be >= 1");
    }
    spec.shape.push_back(static_cast<int>(xs[k]));
  }
  // Labels per example: the dimensions after N (none: one class index).
  size_t per_example = 1;
  for (size_t k = 1; k < ys.size(); ++k) {
    if (ys[k] < 1 || ys[k] > std::numeric_limits<int>::max()) {
      return BadData(y.name() + " has shape " + numpy::ShapeString(ys) + "; every label dimension must be >= 1");
    }
    spec.label_shape.push_back(static_cast<int>(ys[k]));
    per_example *= static_cast<size_t>(ys[k]);
  }
  std::vector<int32_t> labels(static_cast<size_t>(ys[0]) * per_example);
  int64_t max_label = 0;
  for (size_t i = 0; i < labels.size(); ++i) {
    const int64_t v = y.AsInt64(i);
    if (v < 0) {
      return BadData(y.name() + "[" + std::to_string(i) + "] is " +
                     (y.dtype() == DType::kUint64 ? std::string("above 2^63") : std::to_string(v)) +
                     "; labels must be class indices >= 0");
    }
    if (options.num_classes ? v >= *options.num_classes : v >= kMaxNumClasses) {
      return BadData(y.name() + "[" + std::to_string(i) + "] is " + std::to_string(v) + ", not below num_classes (" +
                     std::to_string(options.num_classes.value_or(kMaxNumClasses)) + ")" +
                     (options.num_classes ? "; raise num_classes or fix the label" : ""));
    }
    labels[i] = static_cast<int32_t>(v);
    max_label = std::max(max_label, v);
  }
  spec.num_classes = options.num_classes.value_or(static_cast<int>(max_label) + 1);
  spec.categorical = options.categorical;
  return std::unique_ptr<Source>(
      std::make_unique<ArraySource>(std::move(x), std::move(labels), std::move(spec), options.rescale, where));
}

}  // namespace ringtrain::data
