// Reduce on the CPU: the sum (or mean) over op.reduce_axes of each example. An output value
// sums its input cells in row-major order of the reduced axes, in float, then a mean
// divides by their count: the order backends/cuda/vision_math.h's ReduceValue keeps, so
// both devices give the same bits. Backward gives every input cell its output's gradient
// (divided by the count for a mean).
#include <vector>

#include "backends/cpu/cpu_kernel.h"

namespace ringtrain::backends::cpu {
namespace {

class ReduceKernel final : public OneInputKernel {
 public:
  explicit ReduceKernel(const ops::Node& node)
      : in_size_(InputSize(node)), out_size_(node.output_size()), mean_(node.op.reduce_mean) {
    const ops::Shape& in = node.input_shapes[0];
    const int rank = static_cast<int>(in.size());
    std::vector<int64_t> stride(static_cast<size_t>(rank), 1);
    for (int d = rank - 2; d >= 0; --d) stride[d] = stride[d + 1] * in[d + 1];
    std::vector<bool> reduced(static_cast<size_t>(rank), false);
    for (int a : node.op.reduce_axes) reduced[static_cast<size_t>(a)] = true;
    std::vector<int> kept_dim, red_dim;
    std::vector<int64_t> kept_stride, red_stride;
    for (int d = 0; d < rank; ++d) {
      (reduced[d] ? red_dim : kept_dim).push_back(in[d]);
      (reduced[d] ? red_stride : kept_stride).push_back(stride[d]);
    }
    // Each output's first input cell, and every reduced cell's offset from it, in order.
    for (int64_t o = 0; o < out_size_; ++o) base_.push_back(Offset(o, kept_dim, kept_stride));
    int64_t count = 1;
    for (int d : red_dim) count *= d;
    for (int64_t k = 0; k < count; ++k) offsets_.push_back(Offset(k, red_dim, red_stride));
  }

 protected:
  const float* ForwardOne(const KernelArgs&, const float* in, int batch, bool training) override {
    float* out = EnsureSize(out_, static_cast<size_t>(batch) * out_size_);
    const float count = static_cast<float>(offsets_.size());
    for (int n = 0; n < batch; ++n) {
      const float* x = in + static_cast<int64_t>(n) * in_size_;
      for (int64_t o = 0; o < out_size_; ++o) {
        const float* cell = x + base_[static_cast<size_t>(o)];
        float acc = 0.0f;
        for (int64_t k : offsets_) acc += cell[k];
        out[static_cast<int64_t>(n) * out_size_ + o] = mean_ ? acc / count : acc;
      }
    }
    if (training) batch_ = batch;
    return out;
  }

  const float* BackwardOne(const KernelArgs&, const float* dout, bool need_din) override {
    if (!need_din) return nullptr;
    float* din = EnsureSize(din_, static_cast<size_t>(batch_) * in_size_);
    const float count = static_cast<float>(offsets_.size());
    for (int n = 0; n < batch_; ++n) {
      float* dx = din + static_cast<int64_t>(n) * in_size_;
      for (int64_t o = 0; o < out_size_; ++o) {
        const float dy = dout[static_cast<int64_t>(n) * out_size_ + o];
        const float g = mean_ ? dy / count : dy;
        float* cell = dx + base_[static_cast<size_t>(o)];
        for (int64_t k : offsets_) cell[k] = g;
      }
    }
    return din;
  }

 private:
  // Index i of a row-major grid of `dims`, as an offset through `strides`.
  static int64_t Offset(int64_t i, const std::vector<int>& dims, const std::vector<int64_t>& strides) {
    int64_t off = 0;
    for (int d = static_cast<int>(dims.size()) - 1; d >= 0; --d) {
      off += (i % dims[d]) * strides[d];
      i /= dims[d];
    }
    return off;
  }

  const int64_t in_size_, out_size_;
  const bool mean_;
  std::vector<int64_t> base_, offsets_;
  int batch_ = 0;
  std::vector<float> out_, din_;
};

}  // namespace

std::unique_ptr<CpuKernel> NewReduceKernel(const ops::Node& node) { return std::make_unique<ReduceKernel>(node); }

}  // namespace ringtrain::backends::cpu
