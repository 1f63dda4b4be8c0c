// Permute on the CPU: output axis i (per example) is input axis op.permutation[i].
// Forward walks the output in order and reads the input through the permuted strides;
// Backward writes each output gradient back to its input cell (a bijection: no sums).
#include <vector>

#include "backends/cpu/cpu_kernel.h"

namespace ringtrain::backends::cpu {
namespace {

class PermuteKernel final : public OneInputKernel {
 public:
  explicit PermuteKernel(const ops::Node& node) : out_shape_(node.output_shape), size_(node.output_size()) {
    const ops::Shape& in = node.input_shapes[0];
    std::vector<int64_t> in_strides(in.size(), 1);
    for (int d = static_cast<int>(in.size()) - 2; d >= 0; --d) in_strides[d] = in_strides[d + 1] * in[d + 1];
    for (int p : node.op.permutation) strides_.push_back(in_strides[p]);
  }

 protected:
  const float* ForwardOne(const KernelArgs&, const float* in, int batch, bool training) override {
    float* out = EnsureSize(out_, static_cast<size_t>(batch) * size_);
    for (int n = 0; n < batch; ++n) {
      Walk([&](int64_t o, int64_t i) { out[o] = in[i]; }, static_cast<int64_t>(n) * size_);
    }
    if (training) batch_ = batch;
    return out;
  }

  const float* BackwardOne(const KernelArgs&, const float* dout, bool need_din) override {
    if (!need_din) return nullptr;
    float* din = EnsureSize(din_, static_cast<size_t>(batch_) * size_);
    for (int n = 0; n < batch_; ++n) {
      Walk([&](int64_t o, int64_t i) { din[i] = dout[o]; }, static_cast<int64_t>(n) * size_);
    }
    return din;
  }

 private:
  // f(output index, input index) over one example at `base`, the output in row-major order.
  template <typename F>
  void Walk(F f, int64_t base) const {
    const int rank = static_cast<int>(out_shape_.size());
    std::vector<int> idx(rank, 0);
    int64_t src = 0;
    for (int64_t o = 0; o < size_; ++o) {
      f(base + o, base + src);
      for (int d = rank - 1; d >= 0; --d) {  // the next output index, odometer-wise
        src += strides_[d];
        if (++idx[d] < out_shape_[d]) break;
        src -= strides_[d] * out_shape_[d];
        idx[d] = 0;
      }
    }
  }

  const ops::Shape out_shape_;
  const int64_t size_;
  std::vector<int64_t> strides_;  // the input stride of each output axis
  int batch_ = 0;
  std::vector<float> out_, din_;
};

}  // namespace

std::unique_ptr<CpuKernel> NewPermuteKernel(const ops::Node& node) { return std::make_unique<PermuteKernel>(node); }

}  // namespace ringtrain::backends::cpu
