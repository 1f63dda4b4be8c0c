#include "nn/layers/dense.h"

#include "kernels/kernels.h"
#include "nn/layers/activation.h"
#include "nn/layers/activations.h"

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

void Dense::BindParams(const std::vector<float*>& params, const std::vector<float*>& grads) {
  kernel_ = params[0];
  dkernel_ = grads[0];  // null when frozen
  if (use_bias_) {
    bias_ = params[1];
    dbias_ = grads[1];
  }
}

ops::Op Dense::op() const {
  ops::Op op;
  op.kind = ops::OpKind::kDense;
  op.units = units_;
  op.activation = act_;
  op.use_bias = use_bias_;
  return op;
}

uint64_t Dense::ScratchFloatsPerExample(bool training) const {
  // pre_ (non-fused), and in training dpre_ and the input gradient's scratch.
  const uint64_t units = static_cast<uint64_t>(units_);
  uint64_t floats = fused() ? 0 : units;
  if (training) floats += units + kernels::DenseInputGradScratch(1, units_);
  return floats;
}

const float* Dense::Forward(const float* in, int batch, bool training) {
  const size_t nu = static_cast<size_t>(batch) * units_;
  float* out = EnsureSize(out_, nu);
  float* pre = fused() ? out : EnsureSize(pre_, nu);
  kernels::DenseForward(in, batch, in_, kernel_, units_, use_bias_ ? bias_ : nullptr, act_ == Activation::kRelu, pre);
  if (!fused()) ActivationForward(act_, pre, batch, units_, out);
  if (training) {
    x_ = in;
    batch_ = batch;
  }
  return out;
}

const float* Dense::Backward(const float* dout, bool need_din) {
  const size_t nu = static_cast<size_t>(batch_) * units_;
  float* scratch = act_ == Activation::kLinear ? nullptr : EnsureSize(dpre_, nu);
  const float* d = ActivationBiasBackward(dout, pre_.data(), out_.data(), batch_, units_, act_, scratch,
                                          use_bias_ ? dbias_ : nullptr);
  if (dkernel_ != nullptr) kernels::DenseWeightGrad(x_, d, batch_, in_, units_, dkernel_);  // null: frozen
  if (!need_din) return nullptr;
  float* din = EnsureSize(din_, static_cast<size_t>(batch_) * in_);
  float* t = EnsureSize(scratch_, kernels::DenseInputGradScratch(batch_, units_));
  kernels::DenseInputGrad(d, kernel_, batch_, in_, units_, din, t);
  return din;
}

}  // namespace ringtrain::nn
