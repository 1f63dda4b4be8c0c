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
  // xs: the example arrays, laid side by side in an example's row (one for most sources).
  ArraySource(std::vector<NpyArray> xs, std::vector<int32_t> labels, ExampleSpec spec, std::optional<float> rescale,
              std::string where)
      : xs_(std::move(xs)), labels_(std::move(labels)), spec_(std::move(spec)), rescale_(rescale),
        where_(std::move(where)) {
    for (const NpyArray& x : xs_) {
      size_t row = 1;
      for (size_t k = 1; k < x.shape().size(); ++k) row *= static_cast<size_t>(x.shape()[k]);
      rows_.push_back(row);
    }
  }

  const ExampleSpec& spec() const override { return spec_; }
  int64_t size() const override { return static_cast<int64_t>(labels_.size() / spec_.label_size()); }

  Status Read(int64_t i, float* out, int32_t* label) const override {
    if (i < 0 || i >= size()) return OutOfRange(i);
    for (size_t a = 0; a < xs_.size(); ++a) {
      ReadRow(xs_[a], rows_[a], i, out);
      out += rows_[a];
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

  // Example i of x (row_ values) as floats into out.
  void ReadRow(const NpyArray& x, size_t row_, int64_t i, float* out) const {
    const uint64_t base = static_cast<uint64_t>(i) * row_;
    const uint8_t* p = x.data() + base * numpy::ItemSize(x.dtype());
    switch (x.dtype()) {
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
        for (size_t k = 0; k < row_; ++k) out[k] = static_cast<float>(x.AsDouble(base + k));
        if (rescale_) {
          for (size_t k = 0; k < row_; ++k) out[k] *= *rescale_;
        }
        break;
    }
  }

  std::vector<NpyArray> xs_;
  std::vector<size_t> rows_;  // values per example of each x
  std::vector<int32_t> labels_;
  ExampleSpec spec_;
  std::optional<float> rescale_;
  std::string where_;
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

namespace {

// x's per-example shape, checked.
StatusOr<std::vector<int>> ExampleShape(const NpyArray& x) {
  const auto& xs = x.shape();
  if (xs.size() < 2) {
    return BadData(x.name() + " has shape " + numpy::ShapeString(xs) +
                   "; x must be an array of examples of shape (N, ...) with at least 2 dimensions, e.g. (N, 28, 28)");
  }
  if (xs[0] == 0) return BadData(x.name() + " holds no examples (shape " + numpy::ShapeString(xs) + ")");
  std::vector<int> shape;
  for (size_t k = 1; k < xs.size(); ++k) {
    if (xs[k] < 1 || xs[k] > std::numeric_limits<int>::max()) {
      return BadData(x.name() + " has shape " + numpy::ShapeString(xs) + "; every example dimension must be >= 1");
    }
    shape.push_back(static_cast<int>(xs[k]));
  }
  return shape;
}

// y's n examples' labels, checked, into `labels`; returns their per-example shape and
// sets *max_label. A float y gives float targets (*is_float): each label word holds the
// float32 value's bits.
StatusOr<std::vector<int>> ReadLabels(const NpyArray& y, int64_t n, const ArrayOptions& options,
                                      std::vector<int32_t>* labels, int64_t* max_label, bool* is_float) {
  const auto& ys = y.shape();
  if (ys.empty()) {
    return BadData(y.name() + " is a scalar; y must hold the N examples' labels: shape (N,) for a class index each, "
                   "(N, ...) for several integer labels each (per pixel, multi-hot)");
  }
  *is_float = y.dtype() == DType::kFloat32 || y.dtype() == DType::kFloat64;
  if (!*is_float && (!numpy::IsInteger(y.dtype()) || y.dtype() == DType::kBool)) {
    return BadData(y.name() + " has dtype " + numpy::DTypeName(y.dtype()) +
                   "; labels must be integers (uint8, int32 or int64: class indices) or floats (float32, float64: "
                   "targets), e.g. y.astype(np.int64)");
  }
  if (ys[0] != static_cast<uint64_t>(n)) {
    return BadData("the examples are " + std::to_string(n) + " but " + y.name() + " holds " + std::to_string(ys[0]) +
                   " labels; they must be the same length");
  }
  std::vector<int> shape;
  size_t per_example = 1;
  for (size_t k = 1; k < ys.size(); ++k) {
    if (ys[k] < 1 || ys[k] > std::numeric_limits<int>::max()) {
      return BadData(y.name() + " has shape " + numpy::ShapeString(ys) + "; every label dimension must be >= 1");
    }
    shape.push_back(static_cast<int>(ys[k]));
    per_example *= static_cast<size_t>(ys[k]);
  }
  labels->resize(static_cast<size_t>(n) * per_example);
  *max_label = 0;
  if (*is_float) {
    for (size_t i = 0; i < static_cast<size_t>(n) * per_example; ++i) {
      const float v = static_cast<float>(y.AsDouble(i));
      if (!std::isfinite(v)) {
        return BadData(y.name() + "[" + std::to_string(i) + "] is " + std::to_string(y.AsDouble(i)) +
                       "; float targets must be finite float32 values");
      }
      std::memcpy(&(*labels)[i], &v, sizeof(v));
    }
    return shape;
  }
  for (size_t i = 0; i < static_cast<size_t>(n) * per_example; ++i) {
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
    (*labels)[i] = static_cast<int32_t>(v);
    *max_label = std::max(*max_label, v);
  }
  return shape;
}

size_t Product(const std::vector<int>& shape) {
  size_t n = 1;
  for (int d : shape) n *= static_cast<size_t>(d);
  return n;
}

}  // namespace

StatusOr<std::unique_ptr<Source>> MakeArraySource(NpyArray x, const NpyArray& y, const ArrayOptions& options,
                                                  const std::string& where) {
  ExampleSpec spec;
  RT_ASSIGN_OR_RETURN(spec.shape, ExampleShape(x));
  if (!y.shape().empty() && x.shape()[0] != y.shape()[0]) {
    return BadData(x.name() + " holds " + std::to_string(x.shape()[0]) + " examples but " + y.name() + " holds " +
                   std::to_string(y.shape()[0]) + " labels; they must be the same length");
  }
  std::vector<int32_t> labels;
  int64_t max_label = 0;
  RT_ASSIGN_OR_RETURN(spec.label_shape, ReadLabels(y, static_cast<int64_t>(x.shape()[0]), options, &labels, &max_label,
                                                   &spec.float_targets));
  spec.num_classes = spec.float_targets ? 0 : options.num_classes.value_or(static_cast<int>(max_label) + 1);
  spec.categorical = options.categorical;
  std::vector<NpyArray> xs;
  xs.push_back(std::move(x));
  return std::unique_ptr<Source>(
      std::make_unique<ArraySource>(std::move(xs), std::move(labels), std::move(spec), options.rescale, where));
}

StatusOr<std::unique_ptr<Source>> MakeNamedArraySource(NamedArrays xs, const NamedArrays& ys,
                                                       const ArrayOptions& options, const std::string& where) {
  ExampleSpec spec;
  std::vector<NpyArray> arrays;
  const uint64_t n = xs.at(0).second.shape().empty() ? 0 : xs[0].second.shape()[0];
  size_t total = 0;
  for (auto& [name, x] : xs) {
    ExampleSpec::Part part;
    part.name = name;
    RT_ASSIGN_OR_RETURN(part.shape, ExampleShape(x));
    if (x.shape()[0] != n) {
      return BadData(x.name() + " holds " + std::to_string(x.shape()[0]) + " examples but " + xs[0].second.name() +
                     " holds " + std::to_string(n) + "; every array must be the same length");
    }
    part.offset = total;
    part.size = Product(part.shape);
    total += part.size;
    spec.inputs.push_back(std::move(part));
    arrays.push_back(std::move(x));
  }
  if (total > static_cast<size_t>(std::numeric_limits<int>::max())) return BadData(where + ": examples too large");
  spec.shape = {static_cast<int>(total)};
  // The labels' row: each y's labels per example, side by side.
  size_t label_total = 0;
  for (const auto& [name, y] : ys) {
    size_t per = 1;
    for (size_t k = 1; k < y.shape().size(); ++k) per *= static_cast<size_t>(std::max<uint64_t>(y.shape()[k], 1));
    label_total += per;
  }
  std::vector<int32_t> labels(static_cast<size_t>(n) * label_total);
  size_t offset = 0;
  for (const auto& [name, y] : ys) {
    std::vector<int32_t> mine;
    int64_t max_label = 0;
    ExampleSpec::Part part;
    part.name = name;
    RT_ASSIGN_OR_RETURN(part.shape,
                        ReadLabels(y, static_cast<int64_t>(n), options, &mine, &max_label, &part.float_targets));
    part.offset = offset;
    part.size = Product(part.shape);
    part.num_classes = part.float_targets ? 0 : options.num_classes.value_or(static_cast<int>(max_label) + 1);
    for (uint64_t i = 0; i < n; ++i) {
      std::copy(mine.begin() + static_cast<std::ptrdiff_t>(i * part.size),
                mine.begin() + static_cast<std::ptrdiff_t>((i + 1) * part.size),
                labels.begin() + static_cast<std::ptrdiff_t>(i * label_total + offset));
    }
    offset += part.size;
    spec.num_classes = std::max(spec.num_classes, part.num_classes);
    spec.targets.push_back(std::move(part));
  }
  spec.label_shape = {static_cast<int>(label_total)};
  spec.categorical = options.categorical;
  // An unnamed array ("x" or "y" a single name) is the model's one input or output.
  if (spec.inputs.size() == 1 && spec.inputs[0].name.empty()) {
    spec.shape = spec.inputs[0].shape;
    spec.inputs.clear();
  }
  if (spec.targets.size() == 1 && spec.targets[0].name.empty()) {
    spec.label_shape = spec.targets[0].shape;
    spec.float_targets = spec.targets[0].float_targets;
    spec.num_classes = spec.targets[0].num_classes;
    spec.targets.clear();
  }
  return std::unique_ptr<Source>(
      std::make_unique<ArraySource>(std::move(arrays), std::move(labels), std::move(spec), options.rescale, where));
}

}  // namespace ringtrain::data
