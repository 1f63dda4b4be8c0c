#include "nn/layers/batch_norm.h"

#include "nn/keras/json_fields.h"
#include "nn/layers/norm_fields.h"

namespace ringtrain::nn {

StatusOr<std::unique_ptr<Layer>> BatchNorm::Create(const nlohmann::json& j, std::string name, const Shape& in,
                                                   const std::string& ctx) {
  return CreateImpl(j, std::move(name), in, ctx, /*sync_class=*/false);
}

StatusOr<std::unique_ptr<Layer>> BatchNorm::CreateSync(const nlohmann::json& j, std::string name, const Shape& in,
                                                       const std::string& ctx) {
  return CreateImpl(j, std::move(name), in, ctx, /*sync_class=*/true);
}

StatusOr<std::unique_ptr<Layer>> BatchNorm::CreateImpl(const nlohmann::json& j, std::string name, const Shape& in,
                                                       const std::string& ctx, bool sync_class) {
  RT_RETURN_IF_ERROR(CheckKnownFields(
      j, {"type", "name", "axis", "momentum", "epsilon", "center", "scale", "synchronized", "beta_initializer",
          "gamma_initializer", "moving_mean_initializer", "moving_variance_initializer", "beta_regularizer",
          "gamma_regularizer", "beta_constraint", "gamma_constraint", "renorm", "renorm_clipping",
          "renorm_momentum", "fused", "virtual_batch_size", "adjustment"},
      ctx));
  if (in.empty()) return InvalidArgumentError(ctx + ": batch_normalization needs an input with a channel axis");
  const char* last_axis = "ringtrain normalizes the last axis only (channels last): use axis -1";
  RT_ASSIGN_OR_RETURN(int axes, GetTrailingAxes(j, static_cast<int>(in.size()), ctx, last_axis));
  if (axes != 1) return InvalidArgumentError(ctx + ": 'axis' " + BriefDump(j.at("axis")) + " is not supported; " + last_axis);
  Options o;
  RT_ASSIGN_OR_RETURN(double momentum, GetNumber(j, "momentum", 0.99, 0, false, 1, false, ctx));
  RT_ASSIGN_OR_RETURN(double epsilon, GetNumber(j, "epsilon", 0.001, 0, true, 1e30, false, ctx));
  o.momentum = static_cast<float>(momentum);
  o.epsilon = static_cast<float>(epsilon);
  RT_ASSIGN_OR_RETURN(o.center, GetBool(j, "center", true, ctx));
  RT_ASSIGN_OR_RETURN(o.scale, GetBool(j, "scale", true, ctx));
  RT_ASSIGN_OR_RETURN(o.synchronized, GetBool(j, "synchronized", sync_class, ctx));
  if (sync_class && !o.synchronized) {
    return InvalidArgumentError(ctx + ": 'synchronized' is false in a SyncBatchNormalization; use BatchNormalization");
  }
  RT_RETURN_IF_ERROR(CheckDefaultInitializer(j, "beta_initializer", "zeros", ctx));
  RT_RETURN_IF_ERROR(CheckDefaultInitializer(j, "gamma_initializer", "ones", ctx));
  RT_RETURN_IF_ERROR(CheckDefaultInitializer(j, "moving_mean_initializer", "zeros", ctx));
  RT_RETURN_IF_ERROR(CheckDefaultInitializer(j, "moving_variance_initializer", "ones", ctx));
  const char* remove = "remove it (or set it to null)";
  for (const char* key : {"beta_regularizer", "gamma_regularizer", "beta_constraint", "gamma_constraint",
                          "renorm_clipping", "virtual_batch_size", "adjustment"}) {
    RT_RETURN_IF_ERROR(CheckNullOnly(j, key, ctx, remove));
  }
  RT_ASSIGN_OR_RETURN(bool renorm, GetBool(j, "renorm", false, ctx));
  if (renorm) return InvalidArgumentError(ctx + ": 'renorm' true (batch renormalization) is not supported; set it to false");
  // Only meaningful with renorm, and an implementation choice respectively.
  RT_RETURN_IF_ERROR(GetNumber(j, "renorm_momentum", 0.99, 0, false, 1, false, ctx).status());
  if (auto f = j.find("fused"); f != j.end() && !f->is_null() && !f->is_boolean()) {
    return InvalidArgumentError(ctx + ": 'fused' must be true, false or null, got " + BriefDump(*f));
  }
  return std::unique_ptr<Layer>(new BatchNorm(std::move(name), in, o, sync_class));
}

BatchNorm::BatchNorm(std::string name, const Shape& in, const Options& o, bool sync_class)
    : Layer(std::move(name), in, in), channels_(in.back()), o_(o), sync_class_(sync_class) {}

std::vector<ParamSpec> BatchNorm::ParamSpecs() const {
  // Keras' order: gamma, beta, moving_mean, moving_variance.
  std::vector<ParamSpec> specs;
  if (o_.scale) specs.push_back({"gamma", {channels_}, ParamSpec::Init::kOnes, 0, 0});
  if (o_.center) specs.push_back({"beta", {channels_}, ParamSpec::Init::kZeros, 0, 0});
  specs.push_back({"moving_mean", {channels_}, ParamSpec::Init::kZeros, 0, 0, /*trainable=*/false});
  specs.push_back({"moving_variance", {channels_}, ParamSpec::Init::kOnes, 0, 0, /*trainable=*/false});
  return specs;
}

ops::Op BatchNorm::op() const {
  ops::Op op;
  op.kind = ops::OpKind::kBatchNorm;
  op.training_mode = trainable();
  op.synchronized = o_.synchronized;
  op.epsilon = o_.epsilon;
  op.momentum = o_.momentum;
  op.center = o_.center;
  op.scale = o_.scale;
  return op;
}

}  // namespace ringtrain::nn
