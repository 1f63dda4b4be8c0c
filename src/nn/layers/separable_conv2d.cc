#include "nn/layers/separable_conv2d.h"

#include "nn/layers/conv_args.h"

namespace ringtrain::nn {

StatusOr<std::unique_ptr<Layer>> SeparableConv2D::Create(const nlohmann::json& j, std::string name, const Shape& in,
                                                         const std::string& ctx) {
  RT_RETURN_IF_ERROR(CheckKnownFields(
      j,
      {"type", "name", "filters", "kernel_size", "strides", "padding", "depth_multiplier", "dilation_rate", "groups",
       "activation", "use_bias", "depthwise_initializer", "pointwise_initializer", "bias_initializer",
       "depthwise_regularizer", "pointwise_regularizer", "bias_regularizer"},
      ctx));
  RT_RETURN_IF_ERROR(CheckImageInput(in, "separable_conv2d", ctx));
  RT_ASSIGN_OR_RETURN(int filters, GetPositiveInt(j, "filters", 0, ctx));
  RT_ASSIGN_OR_RETURN(DepthwiseArgs a, GetDepthwiseArgs(j, "SeparableConv2D", ctx));
  RT_RETURN_IF_ERROR(CheckDefaultKernelInitializer(j, "depthwise_initializer", "glorot_uniform", ctx));
  RT_RETURN_IF_ERROR(CheckDefaultKernelInitializer(j, "pointwise_initializer", "glorot_uniform", ctx));
  RT_RETURN_IF_ERROR(CheckDefaultKernelInitializer(j, "bias_initializer", "zeros", ctx));
  for (const char* key : {"depthwise_regularizer", "pointwise_regularizer", "bias_regularizer"}) {
    RT_RETURN_IF_ERROR(CheckNoRegularizer(j, key, ctx));
  }
  RT_ASSIGN_OR_RETURN(Window2D g, DepthwiseWindow(in, a, "intermediate", ctx));
  return std::unique_ptr<Layer>(new SeparableConv2D(std::move(name), in, g, a.multiplier, filters, a.act, a.use_bias));
}

SeparableConv2D::SeparableConv2D(std::string name, const Shape& in, const Window2D& g, int multiplier, int filters,
                                 Activation act, bool use_bias)
    : Layer(std::move(name), in, Shape{g.h.out, g.w.out, filters}),
      g_(g),
      multiplier_(multiplier),
      filters_(filters),
      act_(act),
      use_bias_(use_bias) {}

std::vector<ParamSpec> SeparableConv2D::ParamSpecs() const {
  const int64_t area = static_cast<int64_t>(g_.h.k) * g_.w.k;
  std::vector<ParamSpec> specs;
  specs.push_back({"depthwise_kernel", {g_.h.k, g_.w.k, g_.channels, multiplier_}, ParamSpec::Init::kGlorotUniform,
                   area * g_.channels, area * multiplier_});
  specs.push_back({"pointwise_kernel", {1, 1, mid_channels(), filters_}, ParamSpec::Init::kGlorotUniform,
                   mid_channels(), filters_});
  if (use_bias_) specs.push_back({"bias", {filters_}, ParamSpec::Init::kZeros, 0, 0});
  return specs;
}

ops::Op SeparableConv2D::op() const {
  ops::Op op;
  op.kind = ops::OpKind::kSeparableConv2D;
  op.window = ToOpWindow(g_);
  op.units = filters_;
  op.depth_multiplier = multiplier_;
  op.activation = act_;
  op.use_bias = use_bias_;
  return op;
}

}  // namespace ringtrain::nn
