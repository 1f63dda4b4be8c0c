#include "nn/layers/noise_layers.h"

#include "common/splitmix.h"
#include "nn/keras/json_fields.h"
#include "nn/layers/norm_fields.h"

namespace ringtrain::nn {
namespace {

constexpr uint64_t kNoiseSeedGolden = 0x9E3779B97F4A7C15ULL;

// Keras' "seed": an integer or null, mixed so that seed 0 differs from no seed (as Dropout's).
StatusOr<uint64_t> NoiseLayerSeed(const nlohmann::json& j, const std::string& ctx) {
  auto s = j.find("seed");
  if (s == j.end() || s->is_null()) return uint64_t{0};
  if (!s->is_number_integer()) return InvalidArgumentError(ctx + ": 'seed' must be an integer or null, got " + BriefDump(*s));
  const uint64_t v = s->is_number_unsigned() ? s->get<uint64_t>() : static_cast<uint64_t>(s->get<int64_t>());
  return SplitMix64Finalize(v + kNoiseSeedGolden);
}

}  // namespace

StatusOr<std::unique_ptr<Layer>> SpatialDropout2D::Create(const nlohmann::json& j, std::string name, const Shape& in,
                                                          const std::string& ctx) {
  RT_RETURN_IF_ERROR(CheckKnownFields(j, {"type", "name", "rate", "seed", "noise_shape"}, ctx));
  if (!j.contains("rate")) return InvalidArgumentError(ctx + ": missing 'rate' (the fraction of channels to drop, in [0, 1))");
  RT_ASSIGN_OR_RETURN(double rate, GetNumber(j, "rate", 0, 0, false, 1, true, ctx));
  RT_RETURN_IF_ERROR(CheckNullOnly(j, "noise_shape", ctx, "SpatialDropout2D drops whole channels: remove it"));
  if (in.size() != 3) {
    return InvalidArgumentError(ctx + ": SpatialDropout2D needs a [height, width, channels] input, got " +
                                ShapeWithBatch(in));
  }
  RT_ASSIGN_OR_RETURN(uint64_t seed, NoiseLayerSeed(j, ctx));
  return std::unique_ptr<Layer>(new SpatialDropout2D(std::move(name), in, rate, seed));
}

SpatialDropout2D::SpatialDropout2D(std::string name, const Shape& in, double rate, uint64_t layer_seed)
    : Layer(std::move(name), in, in),
      rate_(static_cast<float>(rate)),
      scale_(1.0f / static_cast<float>(1.0 - rate)),
      name_hash_(HashName(this->name())),
      layer_seed_(layer_seed) {}

ops::Op SpatialDropout2D::op() const {
  ops::Op op;
  op.kind = ops::OpKind::kSpatialDropout2D;
  op.rate = rate_;
  op.dropout_scale = scale_;
  op.name_hash = name_hash_;
  op.layer_seed = layer_seed_;
  return op;
}

StatusOr<std::unique_ptr<Layer>> GaussianNoise::Create(const nlohmann::json& j, std::string name, const Shape& in,
                                                       const std::string& ctx) {
  RT_RETURN_IF_ERROR(CheckKnownFields(j, {"type", "name", "stddev", "seed"}, ctx));
  if (!j.contains("stddev")) return InvalidArgumentError(ctx + ": missing 'stddev' (the noise's standard deviation, >= 0)");
  RT_ASSIGN_OR_RETURN(double stddev, GetNumber(j, "stddev", 0, 0, false, 1e30, false, ctx));
  RT_ASSIGN_OR_RETURN(uint64_t seed, NoiseLayerSeed(j, ctx));
  return std::unique_ptr<Layer>(new GaussianNoise(std::move(name), in, stddev, seed));
}

GaussianNoise::GaussianNoise(std::string name, const Shape& in, double stddev, uint64_t layer_seed)
    : Layer(std::move(name), in, in),
      stddev_(static_cast<float>(stddev)),
      name_hash_(HashName(this->name())),
      layer_seed_(layer_seed) {}

ops::Op GaussianNoise::op() const {
  ops::Op op;
  op.kind = ops::OpKind::kGaussianNoise;
  op.stddev = stddev_;
  op.name_hash = name_hash_;
  op.layer_seed = layer_seed_;
  return op;
}

}  // namespace ringtrain::nn
