#include "nn/layers/separable_conv2d.h"

#include "kernels/kernels.h"
#include "nn/layers/activation.h"
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
      kg_(ToKernelWindow(g)),
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

void SeparableConv2D::BindParams(const std::vector<float*>& params, const std::vector<float*>& grads) {
  depthwise_ = params[0];
  ddepthwise_ = grads[0];
  pointwise_ = params[1];
  dpointwise_ = grads[1];
  if (use_bias_) {
    bias_ = params[2];
    dbias_ = grads[2];
  }
}

ops::Op SeparableConv2D::op() const {
  ops::Op op;
  op.kind = ops::OpKind::kSeparableConv2D;
  op.window = kg_;
  op.units = filters_;
  op.depth_multiplier = multiplier_;
  op.activation = act_;
  op.use_bias = use_bias_;
  return op;
}

uint64_t SeparableConv2D::ScratchFloatsPerExample(bool training) const {
  // mid_ (the depthwise output); in training dmid_, relu's masked gradient and the 1x1
  // convolution's input-gradient scratch.
  const uint64_t pixels = static_cast<uint64_t>(g_.out_pixels());
  const uint64_t mid = pixels * static_cast<uint64_t>(mid_channels());
  if (!training) return mid;
  return 2 * mid + static_cast<uint64_t>(output_size()) +
         kernels::DenseInputGradScratch(static_cast<int>(pixels), filters_);
}

const float* SeparableConv2D::Forward(const float* in, int batch, bool training) {
  const int pixels = batch * g_.out_pixels();
  float* mid = EnsureSize(mid_, static_cast<size_t>(pixels) * mid_channels());
  float* out = EnsureSize(out_, static_cast<size_t>(batch) * output_size());
  kernels::DepthwiseConvForward(kg_, multiplier_, in, batch, depthwise_, nullptr, false, mid);
  kernels::DenseForward(mid, pixels, mid_channels(), pointwise_, filters_, use_bias_ ? bias_ : nullptr,
                        act_ == Activation::kRelu, out);
  if (training) {
    x_ = in;
    batch_ = batch;
  }
  return out;
}

const float* SeparableConv2D::Backward(const float* dout, bool need_din) {
  if (ddepthwise_ == nullptr && dpointwise_ == nullptr && dbias_ == nullptr && !need_din) return nullptr;
  const int pixels = batch_ * g_.out_pixels();
  const size_t rows = static_cast<size_t>(pixels);
  float* masked = act_ == Activation::kRelu ? EnsureSize(dpre_, rows * filters_) : nullptr;
  const float* d = ActivationBiasBackward(dout, out_.data(), rows, static_cast<size_t>(filters_), act_, masked,
                                          use_bias_ ? dbias_ : nullptr);
  if (dpointwise_ != nullptr) kernels::DenseWeightGrad(mid_.data(), d, pixels, mid_channels(), filters_, dpointwise_);
  if (ddepthwise_ == nullptr && !need_din) return nullptr;
  // The gradient at the depthwise output, then through the depthwise convolution.
  float* dmid = EnsureSize(dmid_, rows * mid_channels());
  float* scratch = EnsureSize(scratch_, kernels::DenseInputGradScratch(pixels, filters_));
  kernels::DenseInputGrad(d, pointwise_, pixels, mid_channels(), filters_, dmid, scratch);
  if (ddepthwise_ != nullptr) kernels::DepthwiseConvFilterGrad(kg_, multiplier_, x_, dmid, batch_, ddepthwise_);
  if (!need_din) return nullptr;
  float* din = EnsureSize(din_, static_cast<size_t>(batch_) * input_size());
  kernels::DepthwiseConvInputGrad(kg_, multiplier_, dmid, depthwise_, batch_, din);
  return din;
}

}  // namespace ringtrain::nn
