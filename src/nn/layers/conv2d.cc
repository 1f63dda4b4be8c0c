#include "nn/layers/conv2d.h"

#include <algorithm>

#include "kernels/kernels.h"
#include "nn/layers/activation.h"
#include "nn/layers/activations.h"
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
      kg_(ToKernelWindow(g)),
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

void Conv2D::BindParams(const std::vector<float*>& params, const std::vector<float*>& grads) {
  kernel_ = params[0];
  dkernel_ = grads[0];
  if (use_bias_) {
    bias_ = params[1];
    dbias_ = grads[1];
  }
}

ops::Op Conv2D::op() const {
  ops::Op op;
  op.kind = ops::OpKind::kConv2D;
  op.window = kg_;
  op.units = filters_;
  op.groups = groups_;
  op.activation = act_;
  op.use_bias = use_bias_;
  return op;
}

uint64_t Conv2D::ScratchFloatsPerExample(bool training) const {
  const uint64_t out = static_cast<uint64_t>(output_size());
  // pre_ (non-fused), and in training dact_ and dpre_; the kernels' scratch for every pass.
  uint64_t floats = fused() ? 0 : out;
  if (training) floats += 2 * out;
  uint64_t scratch;
  if (general()) {
    scratch = kernels::GroupedConvScratch(kg_, groups_, 1);
  } else {
    scratch = kernels::ConvForwardScratch(kg_, filters_, 1);
    if (training) {
      scratch = std::max<uint64_t>({scratch, kernels::ConvFilterGradScratch(kg_, filters_, 1),
                                    kernels::ConvInputGradScratch(kg_, filters_, 1)});
    }
  }
  return floats + scratch;
}

const float* Conv2D::Forward(const float* in, int batch, bool training) {
  const size_t outputs = static_cast<size_t>(batch) * output_size();
  float* out = EnsureSize(out_, outputs);
  float* pre = fused() ? out : EnsureSize(pre_, outputs);
  const bool relu = act_ == Activation::kRelu;
  if (general()) {
    float* scratch = EnsureSize(scratch_, kernels::GroupedConvScratch(kg_, groups_, batch));
    kernels::GroupedConvForward(kg_, groups_, filters_, in, batch, kernel_, use_bias_ ? bias_ : nullptr, relu, pre,
                                scratch);
  } else {
    float* scratch = EnsureSize(scratch_, kernels::ConvForwardScratch(kg_, filters_, batch));
    kernels::ConvForward(kg_, filters_, in, batch, kernel_, use_bias_ ? bias_ : nullptr, relu, pre, scratch);
  }
  if (!fused()) ActivationForward(act_, pre, outputs / filters_, filters_, out);
  // Backward may reuse what ConvForward left in scratch_ (the padded input) only after
  // a training Forward, the last one to write it.
  forward_scratch_ = training && !general();
  if (training) {
    x_ = in;
    batch_ = batch;
  }
  return out;
}

const float* Conv2D::Backward(const float* dout, bool need_din) {
  const size_t outputs = static_cast<size_t>(batch_) * output_size();
  if (!fused()) {
    // The gradient before the activation; the kernels then see a linear layer.
    float* dact = EnsureSize(dact_, outputs);
    ActivationBackwardInto(act_, dout, pre_.data(), out_.data(), outputs / filters_, filters_, dact);
    dout = dact;
  }
  if (general()) return BackwardGeneral(dout, need_din);
  // The gradient before the activation: masked into dpre_ by the relu, or dout itself
  // when linear (no copy: one write of the output's size saved).
  const bool relu = act_ == Activation::kRelu;
  float* dpre = need_din && relu ? EnsureSize(dpre_, outputs) : nullptr;
  float* scratch = nullptr;
  if (dkernel_ != nullptr) {
    scratch = EnsureSize(scratch_, kernels::ConvFilterGradScratch(kg_, filters_, batch_));
    const auto filter_grad = forward_scratch_ ? kernels::ConvFilterGradAfterForward : kernels::ConvFilterGrad;
    filter_grad(kg_, filters_, x_, out_.data(), dout, batch_, relu, dkernel_, use_bias_ ? dbias_ : nullptr, dpre,
                scratch);
    forward_scratch_ = false;
  } else if (dpre != nullptr) {
    // Frozen: no filter gradient, only the gradient through the relu.
    const float* y = out_.data();
    for (size_t e = 0; e < outputs; ++e) {
      const float d = dout[e];  // loaded unconditionally: the loop vectorises
      dpre[e] = y[e] > 0.0f ? d : 0.0f;
    }
  }
  if (!need_din) return nullptr;
  float* din = EnsureSize(din_, static_cast<size_t>(batch_) * input_size());
  scratch = EnsureSize(scratch_, kernels::ConvInputGradScratch(kg_, filters_, batch_));
  kernels::ConvInputGrad(kg_, filters_, relu ? dpre : dout, kernel_, batch_, din, scratch);
  return din;
}

const float* Conv2D::BackwardGeneral(const float* dout, bool need_din) {
  if (dkernel_ == nullptr && dbias_ == nullptr && !need_din) return nullptr;
  const size_t rows = static_cast<size_t>(batch_) * g_.out_pixels();
  const bool relu = act_ == Activation::kRelu;
  // The gradient before the activation (dout itself when linear or already applied), with the bias gradient.
  const Activation kernel_act = relu ? Activation::kRelu : Activation::kLinear;
  float* masked = relu ? EnsureSize(dpre_, rows * filters_) : nullptr;
  const float* d = ActivationBiasBackward(dout, out_.data(), rows, static_cast<size_t>(filters_), kernel_act, masked,
                                          use_bias_ ? dbias_ : nullptr);
  float* scratch = EnsureSize(scratch_, kernels::GroupedConvScratch(kg_, groups_, batch_));
  if (dkernel_ != nullptr) kernels::GroupedConvFilterGrad(kg_, groups_, filters_, x_, d, batch_, dkernel_, scratch);
  if (!need_din) return nullptr;
  float* din = EnsureSize(din_, static_cast<size_t>(batch_) * input_size());
  kernels::GroupedConvInputGrad(kg_, groups_, filters_, d, kernel_, batch_, din, scratch);
  return din;
}

}  // namespace ringtrain::nn
