#include "nn/layers/normalization.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "nn/keras/json_fields.h"

namespace ringtrain::nn {
namespace {

struct NormValues {
  std::vector<int64_t> shape;
  std::vector<float> values;  // row-major
};

// A finite number, or a rectangular nested list of them.
bool ReadNormValues(const nlohmann::json& v, size_t depth, NormValues* out) {
  if (v.is_number()) {
    const double d = v.get<double>();
    if (!std::isfinite(d) || std::abs(d) > std::numeric_limits<float>::max()) return false;
    out->values.push_back(static_cast<float>(d));
    return depth == out->shape.size();
  }
  if (!v.is_array() || v.empty() || depth > 8) return false;
  if (depth == out->shape.size()) {
    out->shape.push_back(static_cast<int64_t>(v.size()));
  } else if (depth > out->shape.size() || out->shape[depth] != static_cast<int64_t>(v.size())) {
    return false;
  }
  for (const auto& e : v) {
    if (!ReadNormValues(e, depth + 1, out)) return false;
  }
  return true;
}

// `a` broadcast to `kept` (its dims aligned to the right; each 1 or equal), row-major.
bool BroadcastToKept(const NormValues& a, const std::vector<int64_t>& kept, std::vector<float>* out) {
  if (a.shape.size() > kept.size()) return false;
  const size_t lead = kept.size() - a.shape.size();
  for (size_t d = 0; d < a.shape.size(); ++d) {
    if (a.shape[d] != 1 && a.shape[d] != kept[lead + d]) return false;
  }
  int64_t total = 1;
  for (int64_t k : kept) total *= k;
  out->resize(static_cast<size_t>(total));
  for (int64_t i = 0; i < total; ++i) {
    // Kept coordinates of i, mapped into a's (a 1 reads index 0).
    int64_t rest = i, src = 0, stride = 1;
    for (size_t d = kept.size(); d-- > 0;) {
      const int64_t c = rest % kept[d];
      rest /= kept[d];
      if (d >= lead) {
        const int64_t ad = a.shape[d - lead];
        src += (ad == 1 ? 0 : c) * stride;
        stride *= ad;
      }
    }
    (*out)[static_cast<size_t>(i)] = a.values[static_cast<size_t>(src)];
  }
  return true;
}

std::string KeptShapeText(const std::vector<int64_t>& kept) {
  std::string s = "[";
  for (size_t d = 0; d < kept.size(); ++d) s += (d ? ", " : "") + std::to_string(kept[d]);
  return s + "]";
}

}  // namespace

StatusOr<std::unique_ptr<Layer>> Normalization::Create(const nlohmann::json& j, std::string name, const Shape& in,
                                                       const std::string& ctx) {
  RT_RETURN_IF_ERROR(CheckKnownFields(j, {"type", "name", "axis", "mean", "variance", "invert"}, ctx));
  const int rank = static_cast<int>(in.size());
  const int ndim = rank + 1;  // Keras counts the batch
  // The kept per-example axes.
  std::set<int> kept;
  const nlohmann::json axis = j.contains("axis") ? j["axis"] : nlohmann::json(-1);
  const std::string axis_help = "'axis' must be null, an axis or a list of axes of the input other than the batch (1 to " +
                                std::to_string(rank) + ", or -" + std::to_string(rank) + " to -1), got " + BriefDump(axis);
  if (!axis.is_null()) {
    const nlohmann::json list = axis.is_array() ? axis : nlohmann::json::array({axis});
    for (const auto& a : list) {
      if (!a.is_number_integer()) return InvalidArgumentError(ctx + ": " + axis_help);
      const int64_t v = a.get<int64_t>();
      if (v < -ndim || v >= ndim) return InvalidArgumentError(ctx + ": " + axis_help);
      const int64_t d = v < 0 ? v + ndim : v;
      if (d == 0) {
        return InvalidArgumentError(ctx + ": 'axis' " + BriefDump(axis) +
                                    " keeps the batch axis, whose size ringtrain does not fix: keep other axes");
      }
      if (!kept.insert(static_cast<int>(d - 1)).second) {
        return InvalidArgumentError(ctx + ": 'axis' " + BriefDump(axis) + " names an axis twice");
      }
    }
  }
  std::unique_ptr<Normalization> l(new Normalization(std::move(name), in));
  for (int d : kept) {
    l->kept_shape_.push_back(in[static_cast<size_t>(d)]);
    l->kept_size_ *= in[static_cast<size_t>(d)];
  }
  // The kept element of each example element: j % kept_size_ when the kept axes are the
  // trailing ones (or none), a table otherwise.
  bool trailing = true;
  {
    int expect = rank - static_cast<int>(kept.size());
    for (int d : kept) trailing = trailing && d == expect++;
  }
  if (!trailing) {
    const int64_t size = NumElements(in);
    l->index_.resize(static_cast<size_t>(size));
    for (int64_t e = 0; e < size; ++e) {
      int64_t rest = e, index = 0, stride = 1;
      for (int d = rank; d-- > 0;) {
        const int64_t c = rest % in[static_cast<size_t>(d)];
        rest /= in[static_cast<size_t>(d)];
        if (kept.count(d)) {
          index += c * stride;
          stride *= in[static_cast<size_t>(d)];
        }
      }
      l->index_[static_cast<size_t>(e)] = static_cast<int32_t>(index);
    }
  }
  RT_ASSIGN_OR_RETURN(l->invert_, GetBool(j, "invert", false, ctx));
  const bool has_mean = j.contains("mean") && !j["mean"].is_null();
  const bool has_variance = j.contains("variance") && !j["variance"].is_null();
  if (has_mean != has_variance) {
    return InvalidArgumentError(ctx + ": give both 'mean' and 'variance', or neither (then the layer's weights "
                                "\"mean\" and \"variance\" hold them, from initial_weights)");
  }
  if (has_mean) {
    NormValues mean, variance;
    const std::string shape_help = "(a number, or a list whose shape, aligned to the kept axes from the right, "
                                   "broadcasts to theirs: " +
                                   KeptShapeText(l->kept_shape_) + ")";
    if (!ReadNormValues(j["mean"], 0, &mean)) {
      return InvalidArgumentError(ctx + ": 'mean' must be finite numbers " + shape_help + ", got " + BriefDump(j["mean"]));
    }
    if (!ReadNormValues(j["variance"], 0, &variance)) {
      return InvalidArgumentError(ctx + ": 'variance' must be finite numbers " + shape_help + ", got " +
                                  BriefDump(j["variance"]));
    }
    if (mean.shape != variance.shape) {
      return InvalidArgumentError(ctx + ": 'mean' and 'variance' must have the same shape, got " + BriefDump(j["mean"]) +
                                  " and " + BriefDump(j["variance"]));
    }
    if (!BroadcastToKept(mean, l->kept_shape_, &l->mean_) || !BroadcastToKept(variance, l->kept_shape_, &l->variance_)) {
      return InvalidArgumentError(ctx + ": 'mean' " + BriefDump(j["mean"]) + " does not fit the kept axes " +
                                  shape_help);
    }
    for (float v : l->variance_) {
      if (v < 0) return InvalidArgumentError(ctx + ": 'variance' must not be negative, got " + BriefDump(j["variance"]));
    }
  }
  return std::unique_ptr<Layer>(std::move(l));
}

std::vector<ParamSpec> Normalization::ParamSpecs() const {
  if (!mean_.empty()) return {};
  // Keras' order and names; none trainable. "count" is kept for Keras' weights files only.
  return {{"mean", kept_shape_, ParamSpec::Init::kZeros, 0, 0, /*trainable=*/false},
          {"variance", kept_shape_, ParamSpec::Init::kOnes, 0, 0, /*trainable=*/false},
          {"count", {}, ParamSpec::Init::kZeros, 0, 0, /*trainable=*/false}};
}

ops::Op Normalization::op() const {
  ops::Op op;
  op.kind = ops::OpKind::kNormalization;
  op.epsilon = kEpsilon;
  op.invert = invert_;
  op.norm_size = kept_size_;
  op.norm_index = index_;
  op.mean_values = mean_;
  op.variance_values = variance_;
  return op;
}

}  // namespace ringtrain::nn
