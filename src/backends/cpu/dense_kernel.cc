// Dense on the CPU: a flat input, kernel [in, units], bias [units].
//   forward   out[N, U] = act(in[N, I] x W[I, U] + b)
//   backward  dW = in^T x dpre,  din = dpre x W^T
#include "backends/cpu/activations.h"
#include "backends/cpu/cpu_kernel.h"
#include "kernels/kernels.h"

namespace ringtrain::backends::cpu {
namespace {

// relu and linear run fused in the kernels; the others after them, on pre_.
bool DenseActivationFused(Activation act) { return act == Activation::kLinear || act == Activation::kRelu; }

class DenseKernel final : public OneInputKernel {
 public:
  explicit DenseKernel(const ops::Node& node)
      : node_(node),
        in_(node.input_shapes[0][0]),
        units_(node.op.units),
        act_(node.op.activation),
        use_bias_(node.op.use_bias) {}

 protected:
  const float* ForwardOne(const KernelArgs& args, const float* in, int batch, bool training) override {
    const size_t nu = static_cast<size_t>(batch) * units_;
    float* out = EnsureSize(out_, nu);
    float* pre = fused() ? out : EnsureSize(pre_, nu);
    kernels::DenseForward(in, batch, in_, Param(args, node_, 0), units_, use_bias_ ? Param(args, node_, 1) : nullptr,
                          act_ == Activation::kRelu, pre);
    if (!fused()) ActivationForward(act_, pre, batch, units_, out);
    if (training) {
      x_ = in;
      batch_ = batch;
    }
    return out;
  }

  const float* BackwardOne(const KernelArgs& args, const float* dout, bool need_din) override {
    float* dkernel = Grad(args, node_, 0);  // null when frozen
    float* dbias = use_bias_ ? Grad(args, node_, 1) : nullptr;
    const size_t nu = static_cast<size_t>(batch_) * units_;
    float* scratch = act_ == Activation::kLinear ? nullptr : EnsureSize(dpre_, nu);
    const float* d = ActivationBiasBackward(dout, pre_.data(), out_.data(), batch_, units_, act_, scratch, dbias);
    if (dkernel != nullptr) kernels::DenseWeightGrad(x_, d, batch_, in_, units_, dkernel);  // null: frozen
    if (!need_din) return nullptr;
    float* din = EnsureSize(din_, static_cast<size_t>(batch_) * in_);
    float* t = EnsureSize(scratch_, kernels::DenseInputGradScratch(batch_, units_));
    kernels::DenseInputGrad(d, Param(args, node_, 0), batch_, in_, units_, din, t);
    return din;
  }

 private:
  bool fused() const { return DenseActivationFused(act_); }

  const ops::Node node_;
  const int in_, units_;
  const Activation act_;
  const bool use_bias_;

  const float* x_ = nullptr;  // the input of the last training Forward
  int batch_ = 0;
  std::vector<float> out_, pre_, dpre_, din_, scratch_;
};

}  // namespace

std::unique_ptr<CpuKernel> NewDenseKernel(const ops::Node& node) { return std::make_unique<DenseKernel>(node); }

uint64_t DenseScratchFloatsPerExample(const ops::Node& node, bool training) {
  // pre_ (non-fused), and in training dpre_ and the input gradient's scratch.
  const uint64_t units = static_cast<uint64_t>(node.op.units);
  uint64_t floats = DenseActivationFused(node.op.activation) ? 0 : units;
  if (training) floats += units + kernels::DenseInputGradScratch(1, node.op.units);
  return floats;
}

}  // namespace ringtrain::backends::cpu
