#include "nn/conv2d.h"

#include "kernels/kernels.h"

namespace ringtrain::nn {

StatusOr<std::unique_ptr<Layer>> Conv2D::Create(const nlohmann::json& j, std::string name, const Shape& in,
                                                const std::string& ctx) {
  RT_RETURN_IF_ERROR(CheckKnownFields(
      j, {"type", "name", "filters", "kernel_size", "strides", "padding", "activation", "use_bias",
          "kernel_regularizer", "bias_regularizer"}, ctx));
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
  RT_ASSIGN_OR_RETURN(Activation act, GetActivation(j, ctx));
  RT_ASSIGN_OR_RETURN(bool use_bias, GetBool(j, "use_bias", true, ctx));
  Window2D g;
  g.channels = in[2];
  RT_ASSIGN_OR_RETURN(g.h, MakeWindow(in[0], kernel.first, strides.first, padding, "kernel", "height", ctx));
  RT_ASSIGN_OR_RETURN(g.w, MakeWindow(in[1], kernel.second, strides.second, padding, "kernel", "width", ctx));
  std::unique_ptr<Conv2D> layer(new Conv2D(std::move(name), in, g, filters, act, use_bias));
  RT_ASSIGN_OR_RETURN(layer->kernel_regularizer_, Regularizer::FromJson(j.value("kernel_regularizer", nlohmann::json()),
                                                                     ctx + ": kernel_regularizer"));
  RT_ASSIGN_OR_RETURN(layer->bias_regularizer_, Regularizer::FromJson(j.value("bias_regularizer", nlohmann::json()),
                                                                   ctx + ": bias_regularizer"));
  return std::unique_ptr<Layer>(std::move(layer));
}

Conv2D::Conv2D(std::string name, const Shape& in, const Window2D& g, int filters, Activation act, bool use_bias)
    : Layer(std::move(name), in, Shape{g.h.out, g.w.out, filters}),
      g_(g),
      kg_(ToKernelWindow(g)),
      filters_(filters),
      act_(act),
      use_bias_(use_bias) {}

std::vector<ParamSpec> Conv2D::ParamSpecs() const {
  const int64_t area = static_cast<int64_t>(g_.h.k) * g_.w.k;
  std::vector<ParamSpec> specs;
  specs.push_back({"kernel", {g_.h.k, g_.w.k, g_.channels, filters_}, ParamSpec::Init::kGlorotUniform,
                   area * g_.channels, area * filters_});
  if (use_bias_) specs.push_back({"bias", {filters_}, ParamSpec::Init::kZeros, 0, 0});
  specs[0].regularizer = kernel_regularizer_;
  if (use_bias_) specs[1].regularizer = bias_regularizer_;
  return specs;
}

void Conv2D::BindParams(const std::vector<float*>& params, const std::vector<float*>& grads) {
  kernel_ = params[0];
  dkernel_ = grads[0];
  if (use_bias_) {
    bias_ = params[1];
    dbias_ = grads[1];
  }
}

LayerDesc Conv2D::Describe() const {
  LayerDesc d;
  d.kind = LayerDesc::Kind::kConv2D;
  d.window = kg_;
  d.units = filters_;
  d.relu = act_ == Activation::kRelu;
  d.use_bias = use_bias_;
  return d;
}

const float* Conv2D::Forward(const float* in, int batch, bool training) {
  float* out = EnsureSize(out_, static_cast<size_t>(batch) * output_size());
  float* scratch = EnsureSize(scratch_, kernels::ConvForwardScratch(kg_, filters_, batch));
  kernels::ConvForward(kg_, filters_, in, batch, kernel_, use_bias_ ? bias_ : nullptr, act_ == Activation::kRelu, out,
                       scratch);
  if (training) {
    x_ = in;
    batch_ = batch;
  }
  return out;
}

const float* Conv2D::Backward(const float* dout, bool need_din) {
  const size_t outputs = static_cast<size_t>(batch_) * output_size();
  float* dpre = need_din ? EnsureSize(dpre_, outputs) : nullptr;
  float* scratch = nullptr;
  if (dkernel_ != nullptr) {
    scratch = EnsureSize(scratch_, kernels::ConvFilterGradScratch(kg_, filters_, batch_));
    kernels::ConvFilterGrad(kg_, filters_, x_, out_.data(), dout, batch_, act_ == Activation::kRelu, dkernel_,
                            use_bias_ ? dbias_ : nullptr, dpre, scratch);
  } else if (need_din) {
    // Frozen: no filter gradient, only the gradient through the activation.
    const float* y = out_.data();
    const bool relu = act_ == Activation::kRelu;
    for (size_t e = 0; e < outputs; ++e) dpre[e] = relu && !(y[e] > 0.0f) ? 0.0f : dout[e];
  }
  if (!need_din) return nullptr;
  float* din = EnsureSize(din_, static_cast<size_t>(batch_) * input_size());
  scratch = EnsureSize(scratch_, kernels::ConvInputGradScratch(kg_, filters_, batch_));
  kernels::ConvInputGrad(kg_, filters_, dpre, kernel_, batch_, din, scratch);
  return din;
}

}  // namespace ringtrain::nn
