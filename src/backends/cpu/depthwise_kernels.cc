// DepthwiseConv2D and SeparableConv2D on the CPU, NHWC.
//   DepthwiseConv2D: each input channel c is convolved with its own depth_multiplier (m)
//     filters: depthwise_kernel [kh, kw, c, m], output channel c * m + k (Keras'
//     channel-major order), bias [c * m]. The passes are kernels::DepthwiseConv* (direct
//     loops over contiguous channels).
//   SeparableConv2D: a depthwise convolution (depthwise_kernel [kh, kw, c, m], no bias,
//     linear) into c * m channels, then a pointwise 1x1 convolution (pointwise_kernel
//     [1, 1, c * m, filters]) with the bias [filters] and the activation. The depthwise
//     pass is kernels::DepthwiseConv*; the pointwise one is a dense product over the
//     pixels (kernels::Dense*).
#include "backends/cpu/activations.h"
#include "backends/cpu/cpu_kernel.h"
#include "kernels/kernels.h"

namespace ringtrain::backends::cpu {
namespace {

// relu and linear run fused in the convolution's and the pointwise product's loops; any
// other activation after them, on a kept pre-activation (as Dense does).
bool ActivationFused(Activation act) { return act == Activation::kLinear || act == Activation::kRelu; }

class DepthwiseConv2DKernel final : public OneInputKernel {
 public:
  explicit DepthwiseConv2DKernel(const ops::Node& node)
      : node_(node),
        kg_(node.op.window),
        multiplier_(node.op.depth_multiplier),
        act_(node.op.activation),
        use_bias_(node.op.use_bias),
        input_size_(InputSize(node)),
        output_size_(node.output_size()) {}

 protected:
  const float* ForwardOne(const KernelArgs& args, const float* in, int batch, bool training) override {
    float* out = EnsureSize(out_, static_cast<size_t>(batch) * output_size_);
    float* pre = ActivationFused(act_) ? out : EnsureSize(pre_, static_cast<size_t>(batch) * output_size_);
    kernels::DepthwiseConvForward(kg_, multiplier_, in, batch, Param(args, node_, 0),
                                  use_bias_ ? Param(args, node_, 1) : nullptr, act_ == Activation::kRelu, pre);
    if (!ActivationFused(act_)) {
      ActivationForward(act_, pre, static_cast<size_t>(batch) * (kg_.out_h * kg_.out_w),
                        static_cast<size_t>(kg_.c) * multiplier_, out);
    }
    if (training) {
      x_ = in;
      batch_ = batch;
    }
    return out;
  }

  const float* BackwardOne(const KernelArgs& args, const float* dout, bool need_din) override {
    float* dkernel = Grad(args, node_, 0);
    float* dbias = use_bias_ ? Grad(args, node_, 1) : nullptr;
    if (dkernel == nullptr && dbias == nullptr && !need_din) return nullptr;
    const size_t rows = static_cast<size_t>(batch_) * (kg_.out_h * kg_.out_w);
    const size_t units = static_cast<size_t>(kg_.c) * multiplier_;
    float* scratch = act_ == Activation::kLinear ? nullptr : EnsureSize(dpre_, rows * units);
    const float* d = ActivationBiasBackward(dout, pre_.data(), out_.data(), rows, units, act_, scratch, dbias);
    if (dkernel != nullptr) kernels::DepthwiseConvFilterGrad(kg_, multiplier_, x_, d, batch_, dkernel);
    if (!need_din) return nullptr;
    float* din = EnsureSize(din_, static_cast<size_t>(batch_) * input_size_);
    kernels::DepthwiseConvInputGrad(kg_, multiplier_, d, Param(args, node_, 0), batch_, din);
    return din;
  }

 private:
  const ops::Node node_;
  const kernels::Window kg_;
  const int multiplier_;
  const Activation act_;
  const bool use_bias_;
  const int64_t input_size_, output_size_;

  const float* x_ = nullptr;  // the input of the last training Forward
  int batch_ = 0;
  std::vector<float> out_, pre_, dpre_, din_;  // pre_: the pre-activation when not fused
};

class SeparableConv2DKernel final : public OneInputKernel {
 public:
  explicit SeparableConv2DKernel(const ops::Node& node)
      : node_(node),
        kg_(node.op.window),
        multiplier_(node.op.depth_multiplier),
        filters_(node.op.units),
        act_(node.op.activation),
        use_bias_(node.op.use_bias),
        input_size_(InputSize(node)),
        output_size_(node.output_size()) {}

 protected:
  const float* ForwardOne(const KernelArgs& args, const float* in, int batch, bool training) override {
    const int pixels = batch * out_pixels();
    float* mid = EnsureSize(mid_, static_cast<size_t>(pixels) * mid_channels());
    float* out = EnsureSize(out_, static_cast<size_t>(batch) * output_size_);
    kernels::DepthwiseConvForward(kg_, multiplier_, in, batch, Param(args, node_, 0), nullptr, false, mid);
    float* pre = ActivationFused(act_) ? out : EnsureSize(pre_, static_cast<size_t>(batch) * output_size_);
    kernels::DenseForward(mid, pixels, mid_channels(), Param(args, node_, 1), filters_,
                          use_bias_ ? Param(args, node_, 2) : nullptr, act_ == Activation::kRelu, pre);
    if (!ActivationFused(act_)) ActivationForward(act_, pre, static_cast<size_t>(pixels), filters_, out);
    if (training) {
      x_ = in;
      batch_ = batch;
    }
    return out;
  }

  const float* BackwardOne(const KernelArgs& args, const float* dout, bool need_din) override {
    float* ddepthwise = Grad(args, node_, 0);
    float* dpointwise = Grad(args, node_, 1);
    float* dbias = use_bias_ ? Grad(args, node_, 2) : nullptr;
    if (ddepthwise == nullptr && dpointwise == nullptr && dbias == nullptr && !need_din) return nullptr;
    const int pixels = batch_ * out_pixels();
    const size_t rows = static_cast<size_t>(pixels);
    float* dpre = act_ == Activation::kLinear ? nullptr : EnsureSize(dpre_, rows * filters_);
    const float* d = ActivationBiasBackward(dout, pre_.data(), out_.data(), rows, static_cast<size_t>(filters_), act_,
                                            dpre, dbias);
    if (dpointwise != nullptr) kernels::DenseWeightGrad(mid_.data(), d, pixels, mid_channels(), filters_, dpointwise);
    if (ddepthwise == nullptr && !need_din) return nullptr;
    // The gradient at the depthwise output, then through the depthwise convolution.
    float* dmid = EnsureSize(dmid_, rows * mid_channels());
    float* scratch = EnsureSize(scratch_, kernels::DenseInputGradScratch(pixels, filters_));
    kernels::DenseInputGrad(d, Param(args, node_, 1), pixels, mid_channels(), filters_, dmid, scratch);
    if (ddepthwise != nullptr) kernels::DepthwiseConvFilterGrad(kg_, multiplier_, x_, dmid, batch_, ddepthwise);
    if (!need_din) return nullptr;
    float* din = EnsureSize(din_, static_cast<size_t>(batch_) * input_size_);
    kernels::DepthwiseConvInputGrad(kg_, multiplier_, dmid, Param(args, node_, 0), batch_, din);
    return din;
  }

 private:
  int out_pixels() const { return kg_.out_h * kg_.out_w; }
  int mid_channels() const { return kg_.c * multiplier_; }

  const ops::Node node_;
  const kernels::Window kg_;
  const int multiplier_;
  const int filters_;
  const Activation act_;
  const bool use_bias_;
  const int64_t input_size_, output_size_;

  const float* x_ = nullptr;  // the input of the last training Forward
  int batch_ = 0;
  std::vector<float> mid_, out_, pre_, dpre_, dmid_, din_, scratch_;  // pre_: the pre-activation when not fused
};

}  // namespace

std::unique_ptr<CpuKernel> NewDepthwiseConv2DKernel(const ops::Node& node) {
  return std::make_unique<DepthwiseConv2DKernel>(node);
}

std::unique_ptr<CpuKernel> NewSeparableConv2DKernel(const ops::Node& node) {
  return std::make_unique<SeparableConv2DKernel>(node);
}

uint64_t DepthwiseConv2DScratchFloatsPerExample(const ops::Node& node, bool training) {
  // The direct loops need no scratch; a kept pre-activation when the activation is not
  // fused, and the activation's output gradient in training.
  const uint64_t out = static_cast<uint64_t>(node.output_size());
  const Activation act = node.op.activation;
  return (ActivationFused(act) ? 0 : out) + (training && act != Activation::kLinear ? out : 0);
}

uint64_t SeparableConv2DScratchFloatsPerExample(const ops::Node& node, bool training) {
  // mid_ (the depthwise output); in training dmid_, relu's masked gradient and the 1x1
  // convolution's input-gradient scratch.
  const ops::Window& g = node.op.window;
  const uint64_t pixels = static_cast<uint64_t>(g.out_h * g.out_w);
  const uint64_t mid = pixels * static_cast<uint64_t>(g.c * node.op.depth_multiplier);
  const uint64_t pre = ActivationFused(node.op.activation) ? 0 : static_cast<uint64_t>(node.output_size());
  if (!training) return mid + pre;
  return 2 * mid + pre + static_cast<uint64_t>(node.output_size()) +
         kernels::DenseInputGradScratch(static_cast<int>(pixels), node.op.units);
}

}  // namespace ringtrain::backends::cpu
