#include "nn/layers/layer_norm.h"

#include "nn/keras/json_fields.h"
#include "nn/layers/norm_fields.h"

namespace ringtrain::nn {

StatusOr<std::unique_ptr<Layer>> LayerNorm::Create(const nlohmann::json& j, std::string name, const Shape& in,
                                                   const std::string& ctx) {
  RT_RETURN_IF_ERROR(CheckKnownFields(
      j, {"type", "name", "axis", "epsilon", "center", "scale", "rms_scaling", "beta_initializer",
          "gamma_initializer", "beta_regularizer", "gamma_regularizer", "beta_constraint", "gamma_constraint"},
      ctx));
  if (in.empty()) return InvalidArgumentError(ctx + ": layer_normalization needs an input with at least one axis");
  RT_ASSIGN_OR_RETURN(int axes, GetTrailingAxes(j, static_cast<int>(in.size()), ctx,
                                                "ringtrain normalizes trailing axes only: use -1 or a list of the "
                                                "last axes such as [-2, -1]"));
  RT_ASSIGN_OR_RETURN(double epsilon, GetNumber(j, "epsilon", 0.001, 0, true, 1e30, false, ctx));
  RT_ASSIGN_OR_RETURN(bool center, GetBool(j, "center", true, ctx));
  RT_ASSIGN_OR_RETURN(bool scale, GetBool(j, "scale", true, ctx));
  RT_ASSIGN_OR_RETURN(bool rms, GetBool(j, "rms_scaling", false, ctx));
  if (rms) return InvalidArgumentError(ctx + ": 'rms_scaling' true is not supported; set it to false");
  RT_RETURN_IF_ERROR(CheckDefaultInitializer(j, "beta_initializer", "zeros", ctx));
  RT_RETURN_IF_ERROR(CheckDefaultInitializer(j, "gamma_initializer", "ones", ctx));
  for (const char* key : {"beta_regularizer", "gamma_regularizer", "beta_constraint", "gamma_constraint"}) {
    RT_RETURN_IF_ERROR(CheckNullOnly(j, key, ctx, "remove it (or set it to null)"));
  }
  return std::unique_ptr<Layer>(
      new LayerNorm(std::move(name), in, axes, static_cast<float>(epsilon), center, scale));
}

LayerNorm::LayerNorm(std::string name, const Shape& in, int num_axes, float epsilon, bool center, bool scale)
    : Layer(std::move(name), in, in), epsilon_(epsilon), center_(center), scale_(scale) {
  row_ = 1;
  for (size_t k = in.size() - static_cast<size_t>(num_axes); k < in.size(); ++k) {
    param_shape_.push_back(in[k]);
    row_ *= static_cast<size_t>(in[k]);
  }
}

std::vector<ParamSpec> LayerNorm::ParamSpecs() const {
  std::vector<ParamSpec> specs;  // Keras' order: gamma, beta
  if (scale_) specs.push_back({"gamma", param_shape_, ParamSpec::Init::kOnes, 0, 0});
  if (center_) specs.push_back({"beta", param_shape_, ParamSpec::Init::kZeros, 0, 0});
  return specs;
}

ops::Op LayerNorm::op() const {
  ops::Op op;
  op.kind = ops::OpKind::kLayerNorm;
  op.epsilon = epsilon_;
  op.row_size = static_cast<int64_t>(row_);
  op.center = center_;
  op.scale = scale_;
  return op;
}

}  // namespace ringtrain::nn
