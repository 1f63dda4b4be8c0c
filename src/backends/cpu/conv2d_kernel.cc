// Conv2D on the CPU: NHWC input, kernel HWIO [kh, kw, in / groups, filters], bias
// [filters]. The passes are kernels::ConvForward / ConvFilterGrad / ConvInputGrad, with
// the bias and the activation fused into them. With dilation > 1 or groups > 1 the passes
// are kernels::GroupedConv* (im2col per group + sgemm) instead.
#include <algorithm>

#include "backends/cpu/activations.h"
#include "backends/cpu/cpu_kernel.h"
#include "kernels/kernels.h"

namespace ringtrain::backends::cpu {
namespace {

// relu and linear run fused in the kernels; the others after them, on pre_.
bool ConvActivationFused(Activation act) { return act == Activation::kLinear || act == Activation::kRelu; }
// Dilation or groups: the kernels::GroupedConv* passes.
bool ConvIsGeneral(const ops::Op& op) {
  return op.groups > 1 || op.window.dilation_h > 1 || op.window.dilation_w > 1;
}

class Conv2DKernel final : public OneInputKernel {
 public:
  explicit Conv2DKernel(const ops::Node& node)
      : node_(node),
        kg_(node.op.window),
        filters_(node.op.units),
        groups_(node.op.groups),
        act_(node.op.activation),
        use_bias_(node.op.use_bias),
        input_size_(InputSize(node)),
        output_size_(node.output_size()) {}

 protected:
  const float* ForwardOne(const KernelArgs& args, const float* in, int batch, bool training) override;
  const float* BackwardOne(const KernelArgs& args, const float* dout, bool need_din) override;

 private:
  bool fused() const { return ConvActivationFused(act_); }
  bool general() const { return ConvIsGeneral(node_.op); }
  const float* BackwardGeneral(const KernelArgs& args, const float* dout, bool need_din);

  const ops::Node node_;
  const kernels::Window kg_;
  const int filters_;
  const int groups_;
  const Activation act_;
  const bool use_bias_;
  const int64_t input_size_, output_size_;

  const float* x_ = nullptr;  // the input of the last training Forward
  int batch_ = 0;
  std::vector<float> out_, pre_, dact_, dpre_, din_, scratch_;
  bool forward_scratch_ = false;  // scratch_ holds what the last (training) ConvForward left
};

const float* Conv2DKernel::ForwardOne(const KernelArgs& args, const float* in, int batch, bool training) {
  const float* kernel = Param(args, node_, 0);
  const float* bias = use_bias_ ? Param(args, node_, 1) : nullptr;
  const size_t outputs = static_cast<size_t>(batch) * output_size_;
  float* out = EnsureSize(out_, outputs);
  float* pre = fused() ? out : EnsureSize(pre_, outputs);
  const bool relu = act_ == Activation::kRelu;
  if (general()) {
    float* scratch = EnsureSize(scratch_, kernels::GroupedConvScratch(kg_, groups_, batch));
    kernels::GroupedConvForward(kg_, groups_, filters_, in, batch, kernel, bias, relu, pre, scratch);
  } else {
    float* scratch = EnsureSize(scratch_, kernels::ConvForwardScratch(kg_, filters_, batch));
    kernels::ConvForward(kg_, filters_, in, batch, kernel, bias, relu, pre, scratch);
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

const float* Conv2DKernel::BackwardOne(const KernelArgs& args, const float* dout, bool need_din) {
  const size_t outputs = static_cast<size_t>(batch_) * output_size_;
  if (!fused()) {
    // The gradient before the activation; the kernels then see a linear layer.
    float* dact = EnsureSize(dact_, outputs);
    ActivationBackwardInto(act_, dout, pre_.data(), out_.data(), outputs / filters_, filters_, dact);
    dout = dact;
  }
  if (general()) return BackwardGeneral(args, dout, need_din);
  float* dkernel = Grad(args, node_, 0);  // null: frozen
  float* dbias = use_bias_ ? Grad(args, node_, 1) : nullptr;
  // The gradient before the activation: masked into dpre_ by the relu, or dout itself
  // when linear (no copy: one write of the output's size saved).
  const bool relu = act_ == Activation::kRelu;
  float* dpre = need_din && relu ? EnsureSize(dpre_, outputs) : nullptr;
  float* scratch = nullptr;
  if (dkernel != nullptr) {
    scratch = EnsureSize(scratch_, kernels::ConvFilterGradScratch(kg_, filters_, batch_));
    const auto filter_grad = forward_scratch_ ? kernels::ConvFilterGradAfterForward : kernels::ConvFilterGrad;
    filter_grad(kg_, filters_, x_, out_.data(), dout, batch_, relu, dkernel, dbias, dpre, scratch);
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
  float* din = EnsureSize(din_, static_cast<size_t>(batch_) * input_size_);
  scratch = EnsureSize(scratch_, kernels::ConvInputGradScratch(kg_, filters_, batch_));
  kernels::ConvInputGrad(kg_, filters_, relu ? dpre : dout, Param(args, node_, 0), batch_, din, scratch);
  return din;
}

const float* Conv2DKernel::BackwardGeneral(const KernelArgs& args, const float* dout, bool need_din) {
  float* dkernel = Grad(args, node_, 0);
  float* dbias = use_bias_ ? Grad(args, node_, 1) : nullptr;
  if (dkernel == nullptr && dbias == nullptr && !need_din) return nullptr;
  const size_t rows = static_cast<size_t>(batch_) * (kg_.out_h * kg_.out_w);
  const bool relu = act_ == Activation::kRelu;
  // The gradient before the activation (dout itself when linear or already applied), with the bias gradient.
  const Activation kernel_act = relu ? Activation::kRelu : Activation::kLinear;
  float* masked = relu ? EnsureSize(dpre_, rows * filters_) : nullptr;
  const float* d = ActivationBiasBackward(dout, out_.data(), rows, static_cast<size_t>(filters_), kernel_act, masked,
                                          dbias);
  float* scratch = EnsureSize(scratch_, kernels::GroupedConvScratch(kg_, groups_, batch_));
  if (dkernel != nullptr) kernels::GroupedConvFilterGrad(kg_, groups_, filters_, x_, d, batch_, dkernel, scratch);
  if (!need_din) return nullptr;
  float* din = EnsureSize(din_, static_cast<size_t>(batch_) * input_size_);
  kernels::GroupedConvInputGrad(kg_, groups_, filters_, d, Param(args, node_, 0), batch_, din, scratch);
  return din;
}

}  // namespace

std::unique_ptr<CpuKernel> NewConv2DKernel(const ops::Node& node) { return std::make_unique<Conv2DKernel>(node); }

uint64_t Conv2DScratchFloatsPerExample(const ops::Node& node, bool training) {
  const ops::Op& op = node.op;
  const kernels::Window& kg = op.window;
  const int filters = op.units;
  const uint64_t out = static_cast<uint64_t>(node.output_size());
  // pre_ (non-fused), and in training dact_ and dpre_; the kernels' scratch for every pass.
  uint64_t floats = ConvActivationFused(op.activation) ? 0 : out;
  if (training) floats += 2 * out;
  uint64_t scratch;
  if (ConvIsGeneral(op)) {
    scratch = kernels::GroupedConvScratch(kg, op.groups, 1);
  } else {
    scratch = kernels::ConvForwardScratch(kg, filters, 1);
    if (training) {
      scratch = std::max<uint64_t>({scratch, kernels::ConvFilterGradScratch(kg, filters, 1),
                                    kernels::ConvInputGradScratch(kg, filters, 1)});
    }
  }
  return floats + scratch;
}

}  // namespace ringtrain::backends::cpu
