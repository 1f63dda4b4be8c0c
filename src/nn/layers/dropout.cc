#include "nn/layers/dropout.h"

#include "nn/initializers/init.h"
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

uint64_t Dropout::ScratchFloatsPerExample(bool training) const {
  return training ? static_cast<uint64_t>(input_size()) : 0;  // the mask
}

uint64_t Dropout::StreamKey(uint64_t seed, int64_t step, int replica, uint64_t layer_hash, uint64_t layer_seed) {
  uint64_t k = SplitMix64Finalize(seed + kGolden);
  k = SplitMix64Finalize(k ^ static_cast<uint64_t>(step));
  k = SplitMix64Finalize(k ^ static_cast<uint64_t>(static_cast<int64_t>(replica)));
  k = SplitMix64Finalize(k ^ layer_hash);
  return SplitMix64Finalize(k ^ layer_seed);
}

bool Dropout::Keep(uint64_t key, uint64_t index, float rate) {
  // Element i is SplitMix64's (i + 1)-th output from state `key`; the top 24 bits give
  // a uniform float in [0, 1) exactly, kept when >= rate (TensorFlow's rule).
  const uint64_t z = SplitMix64Finalize(key + (index + 1) * kGolden);
  return static_cast<float>(z >> 40) * (1.0f / 16777216.0f) >= rate;
}

const float* Dropout::Forward(const float* in, int batch, bool training) {
  masked_ = training && rate_ > 0.0f;
  if (!masked_) return in;
  const size_t n = static_cast<size_t>(batch) * static_cast<size_t>(input_size());
  batch_elements_ = n;
  float* out = EnsureSize(out_, n);
  float* mask = EnsureSize(mask_, n);
  const StepContext& c = context();
  const uint64_t key = StreamKey(c.seed, c.step, c.replica, name_hash_, layer_seed_);
  for (size_t i = 0; i < n; ++i) mask[i] = Keep(key, i, rate_) ? scale_ : 0.0f;
  for (size_t i = 0; i < n; ++i) out[i] = in[i] * mask[i];
  return out;
}

const float* Dropout::Backward(const float* dout, bool need_din) {
  if (!need_din) return nullptr;
  if (!masked_) return dout;
  const size_t n = batch_elements_;  // of the last Forward (mask_ may hold more)
  float* din = EnsureSize(din_, n);
  for (size_t i = 0; i < n; ++i) din[i] = dout[i] * mask_[i];
  return din;
}

}  // namespace ringtrain::nn
