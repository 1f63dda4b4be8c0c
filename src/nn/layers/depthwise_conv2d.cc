#include "nn/layers/depthwise_conv2d.h"

#include "nn/layers/conv_args.h"

namespace ringtrain::nn {

StatusOr<std::unique_ptr<Layer>> DepthwiseConv2D::Create(const nlohmann::json& j, std::string name, const Shape& in,
                                                         const std::string& ctx) {
  RT_RETURN_IF_ERROR(CheckKnownFields(j,
                                      {"type", "name", "kernel_size", "strides", "padding", "depth_multiplier",
                                       "dilation_rate", "groups", "activation", "use_bias", "depthwise_initializer",
                                       "bias_initializer", "depthwise_regularizer", "bias_regularizer"},
                                      ctx));
  RT_RETURN_IF_ERROR(CheckImageInput(in, "depthwise_conv2d", ctx));
  RT_ASSIGN_OR_RETURN(DepthwiseArgs a, GetDepthwiseArgs(j, "DepthwiseConv2D", ctx));
  RT_RETURN_IF_ERROR(CheckDefaultKernelInitializer(j, "depthwise_initializer", "glorot_uniform", ctx));
  RT_RETURN_IF_ERROR(CheckDefaultKernelInitializer(j, "bias_initializer", "zeros", ctx));
  RT_RETURN_IF_ERROR(CheckNoRegularizer(j, "depthwise_regularizer", ctx));
  RT_RETURN_IF_ERROR(CheckNoRegularizer(j, "bias_regularizer", ctx));
  RT_ASSIGN_OR_RETURN(Window2D g, DepthwiseWindow(in, a, "output", ctx));
  return std::unique_ptr<Layer>(new DepthwiseConv2D(std::move(name), in, g, a.multiplier, a.act, a.use_bias));
}

DepthwiseConv2D::DepthwiseConv2D(std::string name, const Shape& in, const Window2D& g, int multiplier,
                                 Activation act, bool use_bias)
    : Layer(std::move(name), in, Shape{g.h.out, g.w.out, g.channels * multiplier}),
      g_(g),
      multiplier_(multiplier),
      act_(act),
      use_bias_(use_bias) {}

std::vector<ParamSpec> DepthwiseConv2D::ParamSpecs() const {
  // Keras' fans for a 4-D kernel [kh, kw, c, m]: receptive field times c (in) and m (out).
  const int64_t area = static_cast<int64_t>(g_.h.k) * g_.w.k;
  std::vector<ParamSpec> specs;
  specs.push_back({"depthwise_kernel", {g_.h.k, g_.w.k, g_.channels, multiplier_}, ParamSpec::Init::kGlorotUniform,
                   area * g_.channels, area * multiplier_});
  if (use_bias_) specs.push_back({"bias", {static_cast<int64_t>(g_.channels) * multiplier_}, ParamSpec::Init::kZeros, 0, 0});
  return specs;
}

ops::Op DepthwiseConv2D::op() const {
  ops::Op op;
  op.kind = ops::OpKind::kDepthwiseConv2D;
  op.window = ToOpWindow(g_);
  op.units = g_.channels * multiplier_;
  op.depth_multiplier = multiplier_;
  op.activation = act_;
  op.use_bias = use_bias_;
  return op;
}

}  // namespace ringtrain::nn
