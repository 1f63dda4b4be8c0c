// Conv2DTranspose on the CPU: input [H, W, C], kernel [kh, kw, filters, C], bias
// [filters]. op.window is the Conv2D from the output [Ho, Wo, filters] to the input (the
// kernel is HWIO for it), so the passes are that convolution's:
//   forward   pre = its input gradient applied to x (kernels::GroupedConvInputGrad), + bias,
//             then the activation;
//   backward  d = the gradient before the activation; the kernel's gradient is the
//             convolution's filter gradient with d as its input and x as its output
//             gradient (GroupedConvFilterGrad); the input's gradient is the convolution
//             itself applied to d (GroupedConvForward); the bias' the sum of d.
// GroupedConv* (im2col + one sgemm, groups 1) honour dilation; their sums run in a fixed
// order, so the bits do not depend on the thread count.
#include <algorithm>

#include "backends/cpu/activations.h"
#include "backends/cpu/cpu_kernel.h"
#include "kernels/kernels.h"

namespace ringtrain::backends::cpu {
namespace {

class ConvTransposeKernel final : public OneInputKernel {
 public:
  explicit ConvTransposeKernel(const ops::Node& node)
      : node_(node),
        kg_(node.op.window),
        channels_(node.input_shapes[0][2]),
        filters_(node.op.units),
        act_(node.op.activation),
        use_bias_(node.op.use_bias),
        input_size_(InputSize(node)),
        output_size_(node.output_size()) {}

 protected:
  const float* ForwardOne(const KernelArgs& args, const float* in, int batch, bool training) override {
    const float* kernel = Param(args, node_, 0);
    const size_t outputs = static_cast<size_t>(batch) * output_size_;
    const size_t rows = outputs / filters_;
    float* out = EnsureSize(out_, outputs);
    float* pre = act_ == Activation::kLinear ? out : EnsureSize(pre_, outputs);
    float* scratch = EnsureSize(scratch_, kernels::GroupedConvScratch(kg_, 1, batch));
    kernels::GroupedConvInputGrad(kg_, 1, channels_, in, kernel, batch, pre, scratch);
    if (use_bias_) {
      const float* bias = Param(args, node_, 1);
      for (size_t r = 0; r < rows; ++r) {
        float* p = pre + r * filters_;
        for (int f = 0; f < filters_; ++f) p[f] += bias[f];
      }
    }
    if (act_ != Activation::kLinear) ActivationForward(act_, pre, rows, filters_, out);
    if (training) {
      x_ = in;
      batch_ = batch;
    }
    return out;
  }

  const float* BackwardOne(const KernelArgs& args, const float* dout, bool need_din) override {
    float* dkernel = Grad(args, node_, 0);  // null: frozen
    float* dbias = use_bias_ ? Grad(args, node_, 1) : nullptr;
    if (dkernel == nullptr && dbias == nullptr && !need_din) return nullptr;
    const size_t outputs = static_cast<size_t>(batch_) * output_size_;
    const size_t rows = outputs / filters_;
    float* masked = act_ == Activation::kLinear ? nullptr : EnsureSize(dpre_, outputs);
    const float* d = ActivationBiasBackward(dout, act_ == Activation::kLinear ? nullptr : pre_.data(), out_.data(),
                                            rows, static_cast<size_t>(filters_), act_, masked, dbias);
    float* scratch = EnsureSize(scratch_, kernels::GroupedConvScratch(kg_, 1, batch_));
    if (dkernel != nullptr) kernels::GroupedConvFilterGrad(kg_, 1, channels_, d, x_, batch_, dkernel, scratch);
    if (!need_din) return nullptr;
    float* din = EnsureSize(din_, static_cast<size_t>(batch_) * input_size_);
    kernels::GroupedConvForward(kg_, 1, channels_, d, batch_, Param(args, node_, 0), nullptr, /*relu=*/false, din,
                                scratch);
    return din;
  }

 private:
  const ops::Node node_;
  const kernels::Window kg_;
  const int channels_;  // the layer's input channels: the convolution's filters
  const int filters_;   // the layer's filters: the convolution's input channels
  const Activation act_;
  const bool use_bias_;
  const int64_t input_size_, output_size_;

  const float* x_ = nullptr;  // the input of the last training Forward
  int batch_ = 0;
  std::vector<float> out_, pre_, dpre_, din_, scratch_;
};

}  // namespace

std::unique_ptr<CpuKernel> NewConvTransposeKernel(const ops::Node& node) {
  return std::make_unique<ConvTransposeKernel>(node);
}

uint64_t ConvTransposeScratchFloatsPerExample(const ops::Node& node, bool training) {
  const uint64_t out = static_cast<uint64_t>(node.output_size());
  uint64_t floats = node.op.activation == Activation::kLinear ? 0 : out * (training ? 2 : 1);
  return floats + kernels::GroupedConvScratch(node.op.window, 1, 1);
}

}  // namespace ringtrain::backends::cpu
