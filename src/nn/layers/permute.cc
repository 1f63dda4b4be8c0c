#include "nn/layers/permute.h"

#include "nn/keras/json_fields.h"

namespace ringtrain::nn {

StatusOr<std::unique_ptr<Layer>> Permute::Create(const nlohmann::json& j, std::string name, const Shape& in,
                                                 const std::string& ctx) {
  RT_RETURN_IF_ERROR(CheckKnownFields(j, {"type", "name", "dims"}, ctx));
  const size_t rank = in.size();
  auto it = j.find("dims");
  const std::string want = "a permutation of 1.." + std::to_string(rank) + " (the input's per-example axes, " +
                           "1-based as Keras counts them)";
  if (it == j.end()) return InvalidArgumentError(ctx + ": missing 'dims', which must be " + want);
  std::vector<int> perm;
  std::vector<bool> seen(rank, false);
  bool ok = it->is_array() && it->size() == rank;
  for (size_t i = 0; ok && i < rank; ++i) {
    const nlohmann::json& d = (*it)[i];
    ok = d.is_number_integer() && d.get<int64_t>() >= 1 && d.get<int64_t>() <= static_cast<int64_t>(rank) &&
         !seen[d.get<int64_t>() - 1];
    if (ok) {
      seen[d.get<int64_t>() - 1] = true;
      perm.push_back(static_cast<int>(d.get<int64_t>() - 1));
    }
  }
  if (!ok) return InvalidArgumentError(ctx + ": 'dims' must be " + want + ", got " + BriefDump(*it));
  Shape out;
  for (int p : perm) out.push_back(in[p]);
  return std::unique_ptr<Layer>(new Permute(std::move(name), in, out, std::move(perm)));
}

Permute::Permute(std::string name, const Shape& in, const Shape& out, std::vector<int> permutation)
    : Layer(std::move(name), in, out), permutation_(std::move(permutation)) {}

ops::Op Permute::op() const {
  ops::Op op;
  op.kind = ops::OpKind::kPermute;
  op.permutation = permutation_;
  return op;
}

}  // namespace ringtrain::nn
