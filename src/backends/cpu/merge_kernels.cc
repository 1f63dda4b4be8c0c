// The merge ops on the CPU, over two or more inputs:
//   Add          y = x0 + x1 + ...  (same shapes)
//   Multiply     y = x0 * x1 * ...  (same shapes)
//   Concatenate  along op.axis (a per-example axis); the inputs' shapes agree except along it
//   Subtract     y = x0 - x1
//   Average      y = (x0 + x1 + ...) / n, summed left to right, then divided by n
//   Maximum      y = max(x0, x1, ...), Minimum y = min(...): a later input wins only when
//                strictly beyond the running extreme, so the gradient goes to the first
//                input holding it (TensorFlow's maximum(a, b) gradient, to a where a >= b,
//                applied left to right); a NaN at input 0 stays, a later NaN never wins
// Backward writes an input gradient per input that needs one (Add hands its output
// gradient itself to every input: the same pointer, no copy). Add fuses a following relu
// (AbsorbRelu) and computes a deferred producer's output in its own pass
// (TakeDeferredInput, CpuKernel::AddOutputTo).
#include <algorithm>
#include <cstdint>

#include "backends/cpu/cpu_kernel.h"
#include "kernels/elementwise.h"

namespace ringtrain::backends::cpu {
namespace {

class MergeKernel final : public CpuKernel {
 public:
  explicit MergeKernel(const ops::Node& node)
      : kind_(node.op.kind), axis_(node.op.axis), output_size_(node.output_size()), din_(node.input_shapes.size()) {
    if (kind_ != ops::OpKind::kConcatenate) return;
    const std::vector<ops::Shape>& in = node.input_shapes;
    for (int d = 0; d < axis_; ++d) outer_ *= static_cast<size_t>(in[0][d]);
    for (const ops::Shape& s : in) {
      size_t chunk = 1;
      for (size_t d = static_cast<size_t>(axis_); d < s.size(); ++d) chunk *= static_cast<size_t>(s[d]);
      chunks_.push_back(chunk);
    }
  }

  StatusOr<const float*> Forward(const KernelArgs&, const std::vector<const float*>& in, int batch,
                                 bool training) override;
  Status Backward(const KernelArgs&, const float* dout, const std::vector<bool>& need_din,
                  std::vector<const float*>* din) override;

  // Add takes a following relu over; the others do not.
  bool AbsorbRelu() override {
    fused_relu_ = kind_ == ops::OpKind::kAdd;
    return fused_relu_;
  }
  const float* ReluGradientMask() const override { return fused_relu_ ? out_.data() : nullptr; }
  void GradientMasked() override { masked_ = fused_relu_; }
  // The CPU backend fuses only its own kernels into an Add (CpuBackend::CanFuse).
  void TakeDeferredInput(size_t k, Kernel* producer) override {
    deferred_input_ = k;
    producer_ = static_cast<const CpuKernel*>(producer);
  }

 private:
  const ops::OpKind kind_;
  const int axis_;              // Concatenate: the per-example axis
  const int64_t output_size_;
  size_t outer_ = 1;            // Concatenate: elements per example before the axis
  std::vector<size_t> chunks_;  // Concatenate: per input, elements from the axis on

  std::vector<const float*> x_;  // the inputs of the last training Forward
  int batch_ = 0;
  bool fused_relu_ = false;
  bool masked_ = false;  // the next backward's output gradient is already masked (GradientMasked)
  // Add of two: the input whose producer left its output to this kernel (DeferToAdd).
  size_t deferred_input_ = 0;
  const CpuKernel* producer_ = nullptr;
  std::vector<float> out_;
  std::vector<std::vector<float>> din_;
  std::vector<int32_t> winner_;  // Maximum, Minimum: per element, the input holding the extreme
};

// Maximum and Minimum: element i's winning input, the first holding the extreme.
inline int32_t ExtremeWinner(const std::vector<const float*>& x, size_t i, bool max) {
  float best = x[0][i];
  int32_t at = 0;
  for (size_t k = 1; k < x.size(); ++k) {
    const float v = x[k][i];
    if (max ? v > best : v < best) {
      best = v;
      at = static_cast<int32_t>(k);
    }
  }
  return at;
}

StatusOr<const float*> MergeKernel::Forward(const KernelArgs&, const std::vector<const float*>& in, int batch,
                                            bool training) {
  const size_t n = static_cast<size_t>(batch) * output_size_;
  float* out = EnsureSize(out_, n);
  switch (kind_) {
    case ops::OpKind::kAdd: {
      // Two inputs at least (checked when built); a fused relu after the last sum.
      if (producer_ != nullptr) {  // two inputs, one computed here (IEEE addition commutes: the same bits)
        producer_->AddOutputTo(in[1 - deferred_input_], fused_relu_, out);
        break;
      }
      const size_t last = in.size() - 1;
      kernels::AddArrays(in[0], in[1], n, fused_relu_ && last == 1, out);
      for (size_t k = 2; k <= last; ++k) kernels::AddArrays(out, in[k], n, fused_relu_ && k == last, out);
      break;
    }
    case ops::OpKind::kMultiply:
      std::copy(in[0], in[0] + n, out);
      for (size_t k = 1; k < in.size(); ++k) {
        const float* x = in[k];
        for (size_t i = 0; i < n; ++i) out[i] *= x[i];
      }
      break;
    case ops::OpKind::kConcatenate: {
      const size_t rows = static_cast<size_t>(batch) * outer_;
      float* y = out;
      for (size_t r = 0; r < rows; ++r) {
        for (size_t k = 0; k < in.size(); ++k) {
          const float* x = in[k] + r * chunks_[k];
          y = std::copy(x, x + chunks_[k], y);
        }
      }
      break;
    }
    case ops::OpKind::kSubtract: {
      const float* a = in[0];
      const float* b = in[1];
      for (size_t i = 0; i < n; ++i) out[i] = a[i] - b[i];
      break;
    }
    case ops::OpKind::kAverage: {
      kernels::AddArrays(in[0], in[1], n, /*relu=*/false, out);
      for (size_t k = 2; k < in.size(); ++k) kernels::AddArrays(out, in[k], n, /*relu=*/false, out);
      const float count = static_cast<float>(in.size());
      for (size_t i = 0; i < n; ++i) out[i] /= count;
      break;
    }
    case ops::OpKind::kMaximum:
    case ops::OpKind::kMinimum: {
      const bool max = kind_ == ops::OpKind::kMaximum;
      std::copy(in[0], in[0] + n, out);
      for (size_t k = 1; k < in.size(); ++k) {
        const float* x = in[k];
        for (size_t i = 0; i < n; ++i) {
          if (max ? x[i] > out[i] : x[i] < out[i]) out[i] = x[i];
        }
      }
      break;
    }
    default:
      break;
  }
  if (training) {
    x_.assign(in.begin(), in.end());  // no allocation once sized: the input count is fixed
    batch_ = batch;
  }
  return static_cast<const float*>(out);
}

Status MergeKernel::Backward(const KernelArgs&, const float* dout, const std::vector<bool>& need_din,
                             std::vector<const float*>* din) {
  const size_t n = static_cast<size_t>(batch_) * output_size_;
  const size_t inputs = x_.size();
  for (size_t k = 0; k < inputs; ++k) (*din)[k] = nullptr;
  if (kind_ == ops::OpKind::kConcatenate) {
    const size_t rows = static_cast<size_t>(batch_) * outer_;
    for (size_t k = 0; k < inputs; ++k) {
      if (need_din[k]) (*din)[k] = EnsureSize(din_[k], rows * chunks_[k]);
    }
    const float* d = dout;
    for (size_t r = 0; r < rows; ++r) {
      for (size_t k = 0; k < inputs; ++k) {
        if (need_din[k]) std::copy(d, d + chunks_[k], din_[k].data() + r * chunks_[k]);
        d += chunks_[k];
      }
    }
    return Status::Ok();
  }
  if (kind_ == ops::OpKind::kAdd) {
    // d(x0 + x1 + ...)/dxk = 1: every input gets the output gradient, masked by the
    // fused relu when there is one (computed once, shared by the inputs).
    const float* g = dout;
    const bool mask = fused_relu_ && !masked_;
    masked_ = false;
    if (mask) {
      float* masked = EnsureSize(din_[0], n);
      kernels::ReluMask(dout, out_.data(), n, masked);
      g = masked;
    }
    for (size_t k = 0; k < inputs; ++k) (*din)[k] = need_din[k] ? g : nullptr;
    return Status::Ok();
  }
  if (kind_ == ops::OpKind::kSubtract) {
    // d(x0 - x1)/dx0 = 1, /dx1 = -1.
    if (need_din[0]) (*din)[0] = dout;
    if (need_din[1]) {
      float* g = EnsureSize(din_[1], n);
      for (size_t i = 0; i < n; ++i) g[i] = -dout[i];
      (*din)[1] = g;
    }
    return Status::Ok();
  }
  if (kind_ == ops::OpKind::kAverage) {
    // d(sum / count)/dxk = 1 / count: dout / count, computed once, shared by the inputs.
    float* g = EnsureSize(din_[0], n);
    const float count = static_cast<float>(inputs);
    for (size_t i = 0; i < n; ++i) g[i] = dout[i] / count;
    for (size_t k = 0; k < inputs; ++k) (*din)[k] = need_din[k] ? g : nullptr;
    return Status::Ok();
  }
  if (kind_ == ops::OpKind::kMaximum || kind_ == ops::OpKind::kMinimum) {
    const bool max = kind_ == ops::OpKind::kMaximum;
    int32_t* winner = EnsureSize(winner_, n);
    for (size_t i = 0; i < n; ++i) winner[i] = ExtremeWinner(x_, i, max);
    for (size_t k = 0; k < inputs; ++k) {
      if (!need_din[k]) continue;
      float* g = EnsureSize(din_[k], n);
      const int32_t kk = static_cast<int32_t>(k);
      for (size_t i = 0; i < n; ++i) g[i] = winner[i] == kk ? dout[i] : 0.0f;
      (*din)[k] = g;
    }
    return Status::Ok();
  }
  for (size_t k = 0; k < inputs; ++k) {
    if (!need_din[k]) continue;
    float* g = EnsureSize(din_[k], n);
    std::copy(dout, dout + n, g);
    // Multiply: d(x0 * x1 * ...)/dxk is the product of the others, in input order.
    for (size_t j = 0; j < inputs; ++j) {
      if (j == k) continue;
      const float* x = x_[j];
      for (size_t i = 0; i < n; ++i) g[i] *= x[i];
    }
    (*din)[k] = g;
  }
  return Status::Ok();
}

}  // namespace

std::unique_ptr<CpuKernel> NewMergeKernel(const ops::Node& node) { return std::make_unique<MergeKernel>(node); }

}  // namespace ringtrain::backends::cpu
