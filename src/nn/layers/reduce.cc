#include "nn/layers/reduce.h"

#include <algorithm>

#include "nn/keras/json_fields.h"

namespace ringtrain::nn {

StatusOr<std::unique_ptr<Layer>> Reduce::Create(const nlohmann::json& j, std::string name, const Shape& in,
                                                const std::string& ctx) {
  RT_RETURN_IF_ERROR(CheckKnownFields(j, {"type", "name", "op", "axis", "keepdims"}, ctx));
  const nlohmann::json op = j.value("op", nlohmann::json());
  if (op != "sum" && op != "mean") {
    return InvalidArgumentError(ctx + ": 'op' must be \"sum\" or \"mean\", got " + BriefDump(op));
  }
  const int rank = static_cast<int>(in.size());
  const std::string want = "an axis or a list of axes of the input other than the batch (1 to " +
                           std::to_string(rank) + ", or -" + std::to_string(rank) + " to -1)";
  auto it = j.find("axis");
  if (it == j.end()) return InvalidArgumentError(ctx + ": missing 'axis', which must be " + want);
  const nlohmann::json list = it->is_array() ? *it : nlohmann::json::array({*it});
  std::vector<int> axes;
  for (const nlohmann::json& a : list) {
    const bool ok = a.is_number_integer() && a.get<int64_t>() != 0 && a.get<int64_t>() >= -rank &&
                    a.get<int64_t>() <= rank;
    if (!ok) return InvalidArgumentError(ctx + ": 'axis' must be " + want + ", got " + BriefDump(*it));
    const int v = static_cast<int>(a.get<int64_t>());
    const int axis = v < 0 ? rank + v : v - 1;
    if (std::find(axes.begin(), axes.end(), axis) != axes.end()) {
      return InvalidArgumentError(ctx + ": 'axis' names axis " + std::to_string(axis + 1) + " twice");
    }
    axes.push_back(axis);
  }
  if (axes.empty()) return InvalidArgumentError(ctx + ": 'axis' must be " + want + ", got []");
  std::sort(axes.begin(), axes.end());
  bool keepdims = false;
  if (auto k = j.find("keepdims"); k != j.end()) {
    if (!k->is_boolean()) return InvalidArgumentError(ctx + ": 'keepdims' must be true or false, got " + BriefDump(*k));
    keepdims = k->get<bool>();
  }
  Shape out;
  for (int d = 0; d < rank; ++d) {
    const bool reduced = std::find(axes.begin(), axes.end(), d) != axes.end();
    if (!reduced) out.push_back(in[d]);
    else if (keepdims) out.push_back(1);
  }
  if (out.empty()) out.push_back(1);  // every axis reduced: one value per example
  return std::unique_ptr<Layer>(new Reduce(std::move(name), in, out, std::move(axes), op == "mean"));
}

Reduce::Reduce(std::string name, const Shape& in, const Shape& out, std::vector<int> axes, bool mean)
    : Layer(std::move(name), in, out), axes_(std::move(axes)), mean_(mean) {}

ops::Op Reduce::op() const {
  ops::Op op;
  op.kind = ops::OpKind::kReduce;
  op.reduce_axes = axes_;
  op.reduce_mean = mean_;
  return op;
}

}  // namespace ringtrain::nn
