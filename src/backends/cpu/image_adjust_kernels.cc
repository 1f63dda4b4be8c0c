// RandomBrightness and RandomContrast on the CPU (nn/layers/image_adjust_layers.h). In a
// training Forward example b's factor is UniformIn(ExampleRng(step, op.key, b),
// op.adjust_lo, op.adjust_hi) (backends/cpu/augment_draws.h), then per element
//   brightness: t = x + factor * (value_hi - value_lo)
//   contrast:   t = (x - m) * factor + m, m the example's channel mean: per column the
//               sum over the height from 0 divided by the height, those summed over the
//               width from 0, divided by the width (Keras' mean over height, then width)
// and y = min(max(t, value_lo), value_hi) (TensorFlow's clip_by_value). Backward: g = dy
// where value_lo <= t <= value_hi, else 0; brightness dx = g; contrast
// dx = g * factor + ((s * (1 - factor)) / height) / width, s the sum of g over the
// example's channel in pixel order. Inference passes the input (and the gradient) through.
#include <vector>

#include "backends/cpu/augment_draws.h"
#include "backends/cpu/cpu_kernel.h"

namespace ringtrain::backends::cpu {
namespace {

float AdjustClip(float t, float lo, float hi) {
  const float a = t > lo ? t : lo;
  return a < hi ? a : hi;
}

class ImageAdjustKernel final : public CpuKernel {
 public:
  explicit ImageAdjustKernel(const ops::Node& node)
      : label_(node.Label()),
        op_(node.op),
        contrast_(node.op.kind == ops::OpKind::kRandomContrast),
        h_(node.input_shapes[0][0]),
        w_(node.input_shapes[0][1]),
        c_(node.input_shapes[0][2]) {}

  StatusOr<const float*> Forward(const KernelArgs& args, const std::vector<const float*>& in, int batch,
                                 bool training) override {
    active_ = false;
    if (!training) return in[0];
    RT_ASSIGN_OR_RETURN(const StepContext* step, TrainingStep(args, label_));
    const size_t size = static_cast<size_t>(h_) * w_ * c_;
    const size_t n = static_cast<size_t>(batch) * size;
    float* t = EnsureSize(t_, n);
    float* out = EnsureSize(out_, n);
    float* factors = EnsureSize(factors_, static_cast<size_t>(batch));
    for (int b = 0; b < batch; ++b) {
      Rng rng = ExampleRng(*step, op_.key, b);
      const float f = UniformIn(rng, op_.adjust_lo, op_.adjust_hi);
      factors[b] = f;
      const float* x = in[0] + static_cast<size_t>(b) * size;
      float* tb = t + static_cast<size_t>(b) * size;
      if (!contrast_) {
        for (size_t i = 0; i < size; ++i) tb[i] = x[i] + f * (op_.value_hi - op_.value_lo);
        continue;
      }
      for (int ch = 0; ch < c_; ++ch) {
        float total = 0.0f;
        for (int xw = 0; xw < w_; ++xw) {
          float column = 0.0f;
          for (int yh = 0; yh < h_; ++yh) column += x[(static_cast<size_t>(yh) * w_ + xw) * c_ + ch];
          total += column / static_cast<float>(h_);
        }
        const float m = total / static_cast<float>(w_);
        for (size_t p = 0; p < static_cast<size_t>(h_) * w_; ++p) {
          tb[p * c_ + ch] = (x[p * c_ + ch] - m) * f + m;
        }
      }
    }
    for (size_t i = 0; i < n; ++i) out[i] = AdjustClip(t[i], op_.value_lo, op_.value_hi);
    active_ = true;
    batch_ = batch;
    return static_cast<const float*>(out);
  }

  Status Backward(const KernelArgs&, const float* dout, const std::vector<bool>& need_din,
                  std::vector<const float*>* din) override {
    (*din)[0] = nullptr;
    if (!need_din[0]) return Status::Ok();
    if (!active_) {
      (*din)[0] = dout;
      return Status::Ok();
    }
    const size_t size = static_cast<size_t>(h_) * w_ * c_;
    const size_t n = static_cast<size_t>(batch_) * size;
    float* dx = EnsureSize(din_, n);
    for (size_t i = 0; i < n; ++i) {
      dx[i] = (t_[i] >= op_.value_lo && t_[i] <= op_.value_hi) ? dout[i] : 0.0f;
    }
    if (contrast_) {
      const size_t pixels = static_cast<size_t>(h_) * w_;
      for (int b = 0; b < batch_; ++b) {
        float* g = dx + static_cast<size_t>(b) * size;
        const float f = factors_[static_cast<size_t>(b)];
        for (int ch = 0; ch < c_; ++ch) {
          float s = 0.0f;
          for (size_t p = 0; p < pixels; ++p) s += g[p * c_ + ch];
          for (size_t p = 0; p < pixels; ++p) {
            g[p * c_ + ch] = g[p * c_ + ch] * f + ((s * (1.0f - f)) / static_cast<float>(h_)) / static_cast<float>(w_);
          }
        }
      }
    }
    (*din)[0] = dx;
    return Status::Ok();
  }

 private:
  const std::string label_;
  const ops::Op op_;
  const bool contrast_;
  const int h_, w_, c_;
  bool active_ = false;
  int batch_ = 0;
  std::vector<float> t_, out_, din_, factors_;
};

}  // namespace

std::unique_ptr<CpuKernel> NewImageAdjustKernel(const ops::Node& node) {
  return std::make_unique<ImageAdjustKernel>(node);
}

}  // namespace ringtrain::backends::cpu
