#include "nn/layers/conv2d.h"

#include "nn/layers/conv_args.h"

namespace ringtrain::nn {

StatusOr<std::unique_ptr<Layer>> Conv2D::Create(const nlohmann::json& j, std::string name, const Shape& in,
                                                const std::string& ctx) {
  RT_RETURN_IF_ERROR(CheckKnownFields(
      j, {"type", "name", "filters", "kernel_size", "strides", "padding", "dilation_rate", "groups", "activation",
          "use_bias", "kernel_initializer", "bias_initializer", "kernel_regularizer", "bias_regularizer"},
      ctx));
  if (in.size() != 3) {
    std::string hint;
    if (in.size() == 2) {
      hint = "; add {\"type\": \"reshape\", \"target_shape\": [" + std::to_string(in[0]) + ", " +
             std::to_string(in[1]) + ", 1]} before it";
    }
    return InvalidArgumentError(ctx + ": conv2d needs a 3-D input per example (height, width, channels), got " +
                                ShapeToString(in) + hint);
  }
  RT_ASSIGN_OR_RETURN(int filters, GetPositiveInt(j, "filters", 0, ctx));
  RT_ASSIGN_OR_RETURN(auto kernel, GetIntPair(j, "kernel_size", {0, 0}, ctx));
  RT_ASSIGN_OR_RETURN(auto strides, GetIntPair(j, "strides", {1, 1}, ctx));
  RT_ASSIGN_OR_RETURN(Padding padding, GetPadding(j, ctx));
  RT_ASSIGN_OR_RETURN(auto dilation, GetDilation(j, strides, ctx));
  RT_ASSIGN_OR_RETURN(int groups, GetPositiveInt(j, "groups", 1, ctx));
  if (filters % groups != 0 || in[2] % groups != 0) {
    return InvalidArgumentError(ctx + ": 'groups' " + std::to_string(groups) + " must divide both 'filters' (" +
                                std::to_string(filters) + ") and the input channels (" + std::to_string(in[2]) +
                                "); Keras requires both to be multiples of groups");
  }
  RT_ASSIGN_OR_RETURN(Activation act, GetActivation(j, ctx));
  RT_ASSIGN_OR_RETURN(bool use_bias, GetBool(j, "use_bias", true, ctx));
  RT_ASSIGN_OR_RETURN(Initializer kernel_init, GetInitializer(j, "kernel_initializer", Initializer::kGlorotUniform, ctx));
  RT_ASSIGN_OR_RETURN(Initializer bias_init, GetInitializer(j, "bias_initializer", Initializer::kZeros, ctx));
  Window2D g;
  g.channels = in[2];
  RT_ASSIGN_OR_RETURN(g.h, MakeWindow(in[0], kernel.first, strides.first, padding, "kernel", "height", ctx,
                                      dilation.first));
  RT_ASSIGN_OR_RETURN(g.w, MakeWindow(in[1], kernel.second, strides.second, padding, "kernel", "width", ctx,
                                      dilation.second));
  std::unique_ptr<Conv2D> layer(
      new Conv2D(std::move(name), in, g, filters, groups, act, use_bias, kernel_init, bias_init));
  RT_ASSIGN_OR_RETURN(layer->kernel_regularizer_, Regularizer::FromJson(j.value("kernel_regularizer", nlohmann::json()),
                                                                     ctx + ": kernel_regularizer"));
  RT_ASSIGN_OR_RETURN(layer->bias_regularizer_, Regularizer::FromJson(j.value("bias_regularizer", nlohmann::json()),
                                                                   ctx + ": bias_regularizer"));
  return std::unique_ptr<Layer>(std::move(layer));
}

Conv2D::Conv2D(std::string name, const Shape& in, const Window2D& g, int filters, int groups, Activation act,
               bool use_bias, const Initializer& kernel_init, const Initializer& bias_init)
    : Layer(std::move(name), in, Shape{g.h.out, g.w.out, filters}),
      g_(g),
      filters_(filters),
      groups_(groups),
      act_(act),
      use_bias_(use_bias),
      kernel_init_(kernel_init),
      bias_init_(bias_init) {}

std::vector<ParamSpec> Conv2D::ParamSpecs() const {
  const int64_t area = static_cast<int64_t>(g_.h.k) * g_.w.k;
  const int group_channels = g_.channels / groups_;
  std::vector<ParamSpec> specs;
  specs.push_back({"kernel", {g_.h.k, g_.w.k, group_channels, filters_}, kernel_init_, area * group_channels,
                   area * filters_});
  if (use_bias_) specs.push_back({"bias", {filters_}, bias_init_, filters_, filters_});  // Keras' fans of a 1-D weight
  specs[0].regularizer = kernel_regularizer_;
  if (use_bias_) specs[1].regularizer = bias_regularizer_;
  return specs;
}

ops::Op Conv2D::op() const {
  ops::Op op;
  op.kind = ops::OpKind::kConv2D;
  op.window = ToOpWindow(g_);
  op.units = filters_;
  op.groups = groups_;
  op.activation = act_;
  op.use_bias = use_bias_;
  return op;
}

}  // namespace ringtrain::nn
