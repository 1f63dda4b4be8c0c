// Normalization on the CPU (nn/layers/normalization.h): element j of an example reads
// mean and variance element k = op.norm_index[j] (or j % op.norm_size) and
//   y = (x - mean[k]) / s[k]        (invert: y = mean[k] + x * s[k])
//   s[k] = max(sqrt(variance[k]), op.epsilon)
// each operation rounded in float in that order, as Keras computes it. The values come
// from the op or, when it has none, from the layer's weights "mean" and "variance"
// (params 0 and 1, read on every call: initial_weights may have set them). No weight
// gets a gradient; the input's is dy / s[k] (invert: dy * s[k]).
#include <algorithm>
#include <cmath>

#include "backends/cpu/cpu_kernel.h"

namespace ringtrain::backends::cpu {
namespace {

class NormalizationKernel final : public OneInputKernel {
 public:
  explicit NormalizationKernel(const ops::Node& node)
      : node_(node), size_(InputSize(node)), from_weights_(node.op.mean_values.empty()) {}

 private:
  const float* ForwardOne(const KernelArgs& args, const float* in, int batch, bool training) override {
    Scales(args);
    const float* mean = Mean(args);
    const size_t n = static_cast<size_t>(batch) * static_cast<size_t>(size_);
    float* out = EnsureSize(out_, n);
    const ops::Op& op = node_.op;
    for (size_t i = 0; i < n; ++i) {
      const size_t k = Index(i);
      out[i] = op.invert ? mean[k] + in[i] * scale_[k] : (in[i] - mean[k]) / scale_[k];
    }
    if (training) batch_ = batch;
    return out;
  }

  const float* BackwardOne(const KernelArgs&, const float* dout, bool need_din) override {
    if (!need_din) return nullptr;
    const size_t n = static_cast<size_t>(batch_) * static_cast<size_t>(size_);
    float* din = EnsureSize(din_, n);
    for (size_t i = 0; i < n; ++i) {
      const size_t k = Index(i);
      din[i] = node_.op.invert ? dout[i] * scale_[k] : dout[i] / scale_[k];
    }
    return din;
  }

  // The kept element of batch element i.
  size_t Index(size_t i) const {
    const size_t j = i % static_cast<size_t>(size_);
    const ops::Op& op = node_.op;
    return op.norm_index.empty() ? j % static_cast<size_t>(op.norm_size) : static_cast<size_t>(op.norm_index[j]);
  }
  const float* Mean(const KernelArgs& args) const {
    return from_weights_ ? Param(args, node_, 0) : node_.op.mean_values.data();
  }
  // scale_[k] = max(sqrt(variance[k]), epsilon), from this call's variance.
  void Scales(const KernelArgs& args) {
    const ops::Op& op = node_.op;
    const float* variance = from_weights_ ? Param(args, node_, 1) : op.variance_values.data();
    scale_.resize(static_cast<size_t>(op.norm_size));
    for (size_t k = 0; k < scale_.size(); ++k) scale_[k] = std::max(std::sqrt(variance[k]), op.epsilon);
  }

  const ops::Node node_;
  const int64_t size_;  // floats per example
  const bool from_weights_;
  int batch_ = 0;
  std::vector<float> scale_, out_, din_;
};

}  // namespace

std::unique_ptr<CpuKernel> NewNormalizationKernel(const ops::Node& node) {
  return std::make_unique<NormalizationKernel>(node);
}

}  // namespace ringtrain::backends::cpu
