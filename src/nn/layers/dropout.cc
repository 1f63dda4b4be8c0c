#include "nn/layers/dropout.h"

#include "common/splitmix.h"
#include "nn/keras/json_fields.h"
#include "nn/layers/norm_fields.h"

namespace ringtrain::nn {

namespace {

constexpr uint64_t kGolden = 0x9E3779B97F4A7C15ULL;

}  // namespace

StatusOr<std::unique_ptr<Layer>> Dropout::Create(const nlohmann::json& j, std::string name, const Shape& in,
                                                 const std::string& ctx) {
  RT_RETURN_IF_ERROR(CheckKnownFields(j, {"type", "name", "rate", "noise_shape", "seed"}, ctx));
  if (!j.contains("rate")) return InvalidArgumentError(ctx + ": missing 'rate' (the fraction to drop, in [0, 1))");
  RT_ASSIGN_OR_RETURN(double rate, GetNumber(j, "rate", 0, 0, false, 1, true, ctx));
  RT_RETURN_IF_ERROR(CheckNullOnly(j, "noise_shape", ctx,
                                   "ringtrain drops every element independently: remove it (or set it to null)"));
  uint64_t layer_seed = 0;
  if (auto s = j.find("seed"); s != j.end() && !s->is_null()) {
    if (!s->is_number_integer()) {
      return InvalidArgumentError(ctx + ": 'seed' must be an integer or null, got " + BriefDump(*s));
    }
    layer_seed = s->is_number_unsigned() ? s->get<uint64_t>() : static_cast<uint64_t>(s->get<int64_t>());
    layer_seed = SplitMix64Finalize(layer_seed + kGolden);  // seed 0 differs from no seed
  }
  return std::unique_ptr<Layer>(new Dropout(std::move(name), in, rate, layer_seed));
}

Dropout::Dropout(std::string name, const Shape& in, double rate, uint64_t layer_seed)
    : Layer(std::move(name), in, in),
      rate_(static_cast<float>(rate)),
      scale_(1.0f / static_cast<float>(1.0 - rate)),
      name_hash_(HashName(this->name())),
      layer_seed_(layer_seed) {}

ops::Op Dropout::op() const {
  ops::Op op;
  op.kind = ops::OpKind::kDropout;
  op.rate = rate_;
  op.name_hash = name_hash_;
  op.layer_seed = layer_seed_;
  op.dropout_scale = scale_;
  return op;
}

}  // namespace ringtrain::nn
