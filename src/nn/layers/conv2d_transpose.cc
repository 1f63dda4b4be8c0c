#include "nn/layers/conv2d_transpose.h"

#include <algorithm>

#include "nn/layers/conv_args.h"
#include "nn/layers/window.h"

namespace ringtrain::nn {
namespace {

// Keras' conv_utils.deconv_output_length; output_padding < 0 means None.
int64_t DeconvLength(int in, int k, Padding padding, int output_padding, int stride, int dilation) {
  const int64_t keff = static_cast<int64_t>(k - 1) * dilation + 1;
  if (output_padding < 0) {
    return padding == Padding::kValid ? static_cast<int64_t>(in) * stride + std::max<int64_t>(keff - stride, 0)
                                      : static_cast<int64_t>(in) * stride;
  }
  const int64_t pad = padding == Padding::kSame ? keff / 2 : 0;
  return static_cast<int64_t>(in - 1) * stride + keff - 2 * pad + output_padding;
}

// output_padding: null / absent -> {-1, -1}; an int or a pair of non-negative ints.
StatusOr<std::pair<int, int>> GetOutputPadding(const nlohmann::json& j, std::pair<int, int> strides,
                                               const std::string& ctx) {
  auto it = j.find("output_padding");
  if (it == j.end() || it->is_null()) return std::make_pair(-1, -1);
  const nlohmann::json& v = *it;
  auto ok = [](const nlohmann::json& x) { return x.is_number_integer() && x.get<int64_t>() >= 0; };
  std::pair<int, int> p{-1, -1};
  if (ok(v)) {
    p = {v.get<int>(), v.get<int>()};
  } else if (v.is_array() && v.size() == 2 && ok(v[0]) && ok(v[1])) {
    p = {v[0].get<int>(), v[1].get<int>()};
  } else {
    return InvalidArgumentError(ctx + ": 'output_padding' must be null, a non-negative integer or a pair, got " +
                                BriefDump(v));
  }
  if (p.first >= strides.first || p.second >= strides.second) {
    return InvalidArgumentError(ctx + ": 'output_padding' " + BriefDump(v) + " must be smaller than 'strides' (" +
                                std::to_string(strides.first) + ", " + std::to_string(strides.second) +
                                "), as Keras requires");
  }
  return p;
}

}  // namespace

StatusOr<std::unique_ptr<Layer>> Conv2DTranspose::Create(const nlohmann::json& j, std::string name, const Shape& in,
                                                         const std::string& ctx) {
  RT_RETURN_IF_ERROR(CheckKnownFields(
      j, {"type", "name", "filters", "kernel_size", "strides", "padding", "output_padding", "dilation_rate", "groups",
          "activation", "use_bias", "kernel_initializer", "bias_initializer", "kernel_regularizer",
          "bias_regularizer"},
      ctx));
  RT_RETURN_IF_ERROR(CheckImageInput(in, "conv2d_transpose", ctx));
  RT_ASSIGN_OR_RETURN(int filters, GetPositiveInt(j, "filters", 0, ctx));
  RT_ASSIGN_OR_RETURN(auto kernel, GetIntPair(j, "kernel_size", {0, 0}, ctx));
  RT_ASSIGN_OR_RETURN(auto strides, GetIntPair(j, "strides", {1, 1}, ctx));
  RT_ASSIGN_OR_RETURN(Padding padding, GetPadding(j, ctx));
  RT_ASSIGN_OR_RETURN(auto dilation, GetDilation(j, strides, ctx));
  RT_ASSIGN_OR_RETURN(auto output_padding, GetOutputPadding(j, strides, ctx));
  RT_ASSIGN_OR_RETURN(int groups, GetPositiveInt(j, "groups", 1, ctx));
  if (groups != 1) {
    return InvalidArgumentError(ctx + ": 'groups' " + std::to_string(groups) +
                                " is not implemented for Conv2DTranspose; use 1 (the default)");
  }
  RT_ASSIGN_OR_RETURN(Activation act, GetActivation(j, ctx));
  RT_ASSIGN_OR_RETURN(bool use_bias, GetBool(j, "use_bias", true, ctx));
  RT_ASSIGN_OR_RETURN(Initializer kernel_init,
                      GetInitializer(j, "kernel_initializer", Initializer::kGlorotUniform, ctx));
  RT_ASSIGN_OR_RETURN(Initializer bias_init, GetInitializer(j, "bias_initializer", Initializer::kZeros, ctx));
  const int64_t oh = DeconvLength(in[0], kernel.first, padding, output_padding.first, strides.first, dilation.first);
  const int64_t ow = DeconvLength(in[1], kernel.second, padding, output_padding.second, strides.second,
                                  dilation.second);
  if (oh < 1 || ow < 1 || oh > (1 << 20) || ow > (1 << 20)) {
    return InvalidArgumentError(ctx + ": the output would be " + std::to_string(oh) + "x" + std::to_string(ow) +
                                "; check 'kernel_size', 'strides', 'padding' and 'output_padding'");
  }
  // The Conv2D from the output back to the input: TensorFlow's conv2d_transpose requires
  // it to give the input's size.
  RT_ASSIGN_OR_RETURN(Window1D wh, MakeWindow(static_cast<int>(oh), kernel.first, strides.first, padding, "kernel",
                                              "height", ctx, dilation.first));
  RT_ASSIGN_OR_RETURN(Window1D ww, MakeWindow(static_cast<int>(ow), kernel.second, strides.second, padding, "kernel",
                                              "width", ctx, dilation.second));
  if (wh.out != in[0] || ww.out != in[1]) {
    return InvalidArgumentError(ctx + ": 'output_padding' " + BriefDump(j.value("output_padding", nlohmann::json())) +
                                " gives a " + std::to_string(oh) + "x" + std::to_string(ow) +
                                " output, from which the convolution does not return the " + std::to_string(in[0]) +
                                "x" + std::to_string(in[1]) + " input (TensorFlow refuses it too); change it");
  }
  ops::Window g;
  g.h = static_cast<int>(oh);
  g.w = static_cast<int>(ow);
  g.c = filters;
  g.kh = kernel.first;
  g.kw = kernel.second;
  g.stride_h = strides.first;
  g.stride_w = strides.second;
  g.pad_top = wh.pad_before;
  g.pad_left = ww.pad_before;
  g.out_h = in[0];
  g.out_w = in[1];
  g.dilation_h = dilation.first;
  g.dilation_w = dilation.second;
  std::unique_ptr<Conv2DTranspose> layer(
      new Conv2DTranspose(std::move(name), in, g, act, use_bias, kernel_init, bias_init));
  RT_ASSIGN_OR_RETURN(layer->kernel_regularizer_, Regularizer::FromJson(j.value("kernel_regularizer", nlohmann::json()),
                                                                        ctx + ": kernel_regularizer"));
  RT_ASSIGN_OR_RETURN(layer->bias_regularizer_, Regularizer::FromJson(j.value("bias_regularizer", nlohmann::json()),
                                                                      ctx + ": bias_regularizer"));
  return std::unique_ptr<Layer>(std::move(layer));
}

Conv2DTranspose::Conv2DTranspose(std::string name, const Shape& in, const ops::Window& g, Activation act,
                                 bool use_bias, const Initializer& kernel_init, const Initializer& bias_init)
    : Layer(std::move(name), in, Shape{g.h, g.w, g.c}),
      g_(g),
      act_(act),
      use_bias_(use_bias),
      kernel_init_(kernel_init),
      bias_init_(bias_init) {}

std::vector<ParamSpec> Conv2DTranspose::ParamSpecs() const {
  const int64_t area = static_cast<int64_t>(g_.kh) * g_.kw;
  const int in_channels = input_shape()[2];
  const int filters = g_.c;
  // Keras' fans of a [kh, kw, filters, in] kernel: area * shape[-2], area * shape[-1].
  std::vector<ParamSpec> specs;
  specs.push_back({"kernel", {g_.kh, g_.kw, filters, in_channels}, kernel_init_, area * filters, area * in_channels});
  if (use_bias_) specs.push_back({"bias", {filters}, bias_init_, filters, filters});
  specs[0].regularizer = kernel_regularizer_;
  if (use_bias_) specs[1].regularizer = bias_regularizer_;
  return specs;
}

ops::Op Conv2DTranspose::op() const {
  ops::Op op;
  op.kind = ops::OpKind::kConv2DTranspose;
  op.window = g_;
  op.units = g_.c;
  op.activation = act_;
  op.use_bias = use_bias_;
  return op;
}

}  // namespace ringtrain::nn
