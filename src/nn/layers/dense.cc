#include "nn/layers/dense.h"

namespace ringtrain::nn {

StatusOr<std::unique_ptr<Layer>> Dense::Create(const nlohmann::json& j, std::string name, const Shape& in,
                                               const std::string& ctx) {
  RT_RETURN_IF_ERROR(CheckKnownFields(j,
                                      {"type", "name", "units", "activation", "use_bias", "kernel_initializer",
                                       "bias_initializer", "kernel_regularizer", "bias_regularizer"},
                                      ctx));
  if (in.size() != 1) {
    return InvalidArgumentError(ctx + ": dense needs a flat input per example, got " + ShapeToString(in) +
                                "; add {\"type\": \"flatten\"} before it");
  }
  RT_ASSIGN_OR_RETURN(int units, GetPositiveInt(j, "units", 0, ctx));
  RT_ASSIGN_OR_RETURN(Activation act, GetActivation(j, ctx));
  RT_ASSIGN_OR_RETURN(bool use_bias, GetBool(j, "use_bias", true, ctx));
  RT_ASSIGN_OR_RETURN(Initializer kernel_init, GetInitializer(j, "kernel_initializer", Initializer::kGlorotUniform, ctx));
  RT_ASSIGN_OR_RETURN(Initializer bias_init, GetInitializer(j, "bias_initializer", Initializer::kZeros, ctx));
  std::unique_ptr<Dense> layer(new Dense(std::move(name), in[0], units, act, use_bias, kernel_init, bias_init));
  RT_ASSIGN_OR_RETURN(layer->kernel_regularizer_, Regularizer::FromJson(j.value("kernel_regularizer", nlohmann::json()),
                                                                     ctx + ": kernel_regularizer"));
  RT_ASSIGN_OR_RETURN(layer->bias_regularizer_, Regularizer::FromJson(j.value("bias_regularizer", nlohmann::json()),
                                                                   ctx + ": bias_regularizer"));
  return std::unique_ptr<Layer>(std::move(layer));
}

Dense::Dense(std::string name, int in, int units, Activation act, bool use_bias, const Initializer& kernel_init,
             const Initializer& bias_init)
    : Layer(std::move(name), Shape{in}, Shape{units}),
      in_(in),
      units_(units),
      act_(act),
      use_bias_(use_bias),
      kernel_init_(kernel_init),
      bias_init_(bias_init) {}

std::vector<ParamSpec> Dense::ParamSpecs() const {
  std::vector<ParamSpec> specs;
  specs.push_back({"kernel", {in_, units_}, kernel_init_, in_, units_});
  if (use_bias_) specs.push_back({"bias", {units_}, bias_init_, units_, units_});  // Keras' fans of a 1-D weight
  specs[0].regularizer = kernel_regularizer_;
  if (use_bias_) specs[1].regularizer = bias_regularizer_;
  return specs;
}

ops::Op Dense::op() const {
  ops::Op op;
  op.kind = ops::OpKind::kDense;
  op.units = units_;
  op.activation = act_;
  op.use_bias = use_bias_;
  return op;
}

}  // namespace ringtrain::nn
