// The ops that move or rescale values without weights, on the CPU:
//   ZeroPadding2D  [H, W, C] -> [top + H + bottom, left + W + right, C] with zeros
//                  around (op.window.pad_top, pad_left; the rest from the output shape);
//                  Backward takes the inner block of dy.
//   Rescaling      y = x * scale + offset per channel (the last axis); din = dout * scale.
//   View           Reshape, Flatten: the same bytes under another shape; the pointers
//                  pass through in both directions.
#include <algorithm>
#include <cstring>

#include "backends/cpu/cpu_kernel.h"

namespace ringtrain::backends::cpu {
namespace {

class ZeroPadding2DKernel final : public OneInputKernel {
 public:
  explicit ZeroPadding2DKernel(const ops::Node& node)
      : is_(node.input_shapes[0]),
        os_(node.output_shape),
        top_(node.op.window.pad_top),
        left_(node.op.window.pad_left),
        input_size_(InputSize(node)),
        output_size_(node.output_size()) {}

 protected:
  const float* ForwardOne(const KernelArgs&, const float* in, int batch, bool training) override {
    float* out = EnsureSize(out_, static_cast<size_t>(batch) * output_size_);
    const ops::Shape& is = is_;
    const ops::Shape& os = os_;
    const size_t row = static_cast<size_t>(is[1]) * is[2];  // one input row
    std::fill(out, out + static_cast<size_t>(batch) * output_size_, 0.0f);
    for (int n = 0; n < batch; ++n) {
      for (int h = 0; h < is[0]; ++h) {
        std::memcpy(
            out + static_cast<size_t>(n) * output_size_ + ((static_cast<size_t>(h) + top_) * os[1] + left_) * os[2],
            in + static_cast<size_t>(n) * input_size_ + static_cast<size_t>(h) * row, row * sizeof(float));
      }
    }
    if (training) batch_ = batch;
    return out;
  }

  const float* BackwardOne(const KernelArgs&, const float* dout, bool need_din) override {
    if (!need_din) return nullptr;
    float* din = EnsureSize(din_, static_cast<size_t>(batch_) * input_size_);
    const ops::Shape& is = is_;
    const ops::Shape& os = os_;
    const size_t row = static_cast<size_t>(is[1]) * is[2];
    for (int n = 0; n < batch_; ++n) {
      for (int h = 0; h < is[0]; ++h) {
        std::memcpy(
            din + static_cast<size_t>(n) * input_size_ + static_cast<size_t>(h) * row,
            dout + static_cast<size_t>(n) * output_size_ + ((static_cast<size_t>(h) + top_) * os[1] + left_) * os[2],
            row * sizeof(float));
      }
    }
    return din;
  }

 private:
  const ops::Shape is_, os_;
  const int top_, left_;
  const int64_t input_size_, output_size_;
  int batch_ = 0;
  std::vector<float> out_, din_;
};

class RescalingKernel final : public OneInputKernel {
 public:
  explicit RescalingKernel(const ops::Node& node)
      : scale_(node.op.scale_values), offset_(node.op.offset_values), output_size_(node.output_size()) {}

 protected:
  const float* ForwardOne(const KernelArgs&, const float* in, int batch, bool training) override {
    const size_t c = scale_.size();
    const size_t rows = static_cast<size_t>(batch) * output_size_ / c;
    float* out = EnsureSize(out_, rows * c);
    const float* s = scale_.data();
    const float* o = offset_.data();
    for (size_t r = 0; r < rows; ++r) {
      const float* x = in + r * c;
      float* y = out + r * c;
      for (size_t k = 0; k < c; ++k) y[k] = x[k] * s[k] + o[k];
    }
    if (training) batch_ = batch;
    return out;
  }

  const float* BackwardOne(const KernelArgs&, const float* dout, bool need_din) override {
    if (!need_din) return nullptr;
    const size_t c = scale_.size();
    const size_t rows = static_cast<size_t>(batch_) * output_size_ / c;
    float* din = EnsureSize(din_, rows * c);
    const float* s = scale_.data();
    for (size_t r = 0; r < rows; ++r) {
      const float* d = dout + r * c;
      float* g = din + r * c;
      for (size_t k = 0; k < c; ++k) g[k] = d[k] * s[k];
    }
    return din;
  }

 private:
  const std::vector<float> scale_, offset_;  // one per channel (a scalar repeated)
  const int64_t output_size_;
  int batch_ = 0;
  std::vector<float> out_, din_;
};

class ViewKernel final : public OneInputKernel {
 protected:
  const float* ForwardOne(const KernelArgs&, const float* in, int, bool) override { return in; }
  const float* BackwardOne(const KernelArgs&, const float* dout, bool need_din) override {
    return need_din ? dout : nullptr;
  }
};

}  // namespace

std::unique_ptr<CpuKernel> NewZeroPadding2DKernel(const ops::Node& node) {
  return std::make_unique<ZeroPadding2DKernel>(node);
}
std::unique_ptr<CpuKernel> NewRescalingKernel(const ops::Node& node) {
  return std::make_unique<RescalingKernel>(node);
}
std::unique_ptr<CpuKernel> NewViewKernel(const ops::Node&) { return std::make_unique<ViewKernel>(); }

}  // namespace ringtrain::backends::cpu
