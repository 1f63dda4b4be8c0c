// The Activation op on the CPU, elementwise over any input shape (softmax over the last
// axis): the plain function of op.activation (backends/cpu/activations.h), or, for the
// ReLU and LeakyReLU layers' arguments (op.relu.generic), Keras' relu:
//   y = min(x > threshold ? x : 0, max_value) + negative_slope * min(x - threshold, 0)
// Backward reads the input of the last training Forward. A plain relu fused into the
// kernel before it passes through (PassThrough).
#include <algorithm>
#include <cmath>
#include <limits>

#include "backends/cpu/activations.h"
#include "backends/cpu/cpu_kernel.h"

namespace ringtrain::backends::cpu {
namespace {

class ActivationKernel final : public OneInputKernel {
 public:
  explicit ActivationKernel(const ops::Node& node)
      : act_(node.op.activation),
        generic_relu_(node.op.relu.generic),
        relu_(node.op.relu),
        units_(static_cast<size_t>(node.input_shapes[0].back())),
        output_size_(node.output_size()) {}

  void PassThrough() override { pass_through_ = true; }

 protected:
  const float* ForwardOne(const KernelArgs&, const float* in, int batch, bool training) override {
    if (pass_through_) return in;
    const size_t n = static_cast<size_t>(batch) * output_size_;
    float* out = EnsureSize(out_, n);
    if (!generic_relu_) {
      ActivationForward(act_, in, n / units(), units(), out);
    } else {
      const ops::Op::Relu r = relu_;
      const float max_value = r.has_max ? r.max_value : std::numeric_limits<float>::infinity();
      for (size_t i = 0; i < n; ++i) {
        const float x = in[i];
        const float pos = std::min(x > r.threshold ? x : 0.0f, max_value);
        out[i] = x < r.threshold ? pos + r.negative_slope * (x - r.threshold) : pos;
      }
    }
    if (training) {
      x_ = in;
      batch_ = batch;
    }
    return out;
  }

  const float* BackwardOne(const KernelArgs&, const float* dout, bool need_din) override {
    if (!need_din) return nullptr;
    if (pass_through_) return dout;
    const size_t n = static_cast<size_t>(batch_) * output_size_;
    float* din = EnsureSize(din_, n);
    if (!generic_relu_) {
      ActivationBackwardInto(act_, dout, x_, out_.data(), n / units(), units(), din);
      return din;
    }
    const ops::Op::Relu r = relu_;
    const float max_value = r.has_max ? r.max_value : std::numeric_limits<float>::infinity();
    if (!r.has_max && r.threshold == 0.0f && r.negative_slope != 0.0f) {
      // Keras' leaky_relu path (TensorFlow's LeakyReluGrad: the slope at 0 too).
      for (size_t i = 0; i < n; ++i) din[i] = x_[i] > 0.0f ? dout[i] : dout[i] * r.negative_slope;
      return din;
    }
    for (size_t i = 0; i < n; ++i) {
      const float x = x_[i];
      float g = x > r.threshold && x < max_value ? 1.0f : 0.0f;
      if (x < r.threshold) g += r.negative_slope;
      din[i] = dout[i] * g;
    }
    return din;
  }

 private:
  size_t units() const { return units_; }

  const Activation act_;
  const bool generic_relu_;
  const ops::Op::Relu relu_;  // the ReLU / LeakyReLU layers' arguments, used when generic_relu_
  const size_t units_;        // the last axis (softmax's)
  const int64_t output_size_;
  bool pass_through_ = false;  // the kernel before applies this relu (AbsorbRelu)

  const float* x_ = nullptr;  // the input of the last training Forward
  int batch_ = 0;
  std::vector<float> out_, din_;
};

}  // namespace

std::unique_ptr<CpuKernel> NewActivationKernel(const ops::Node& node) {
  return std::make_unique<ActivationKernel>(node);
}

}  // namespace ringtrain::backends::cpu
