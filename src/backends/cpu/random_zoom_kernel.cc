// RandomZoom on the CPU (nn/layers/random_zoom.h): in a training Forward each example is
// sampled (backends/cpu/image_transform.h ProjectiveSampler, as RandomTranslation) through
// its zoom transform (DrawZoomTransform below); Backward adds the sampler's adjoint.
// Inference passes the input through.
#include <cstring>
#include <vector>

#include "backends/cpu/augment_draws.h"
#include "backends/cpu/cpu_kernel.h"
#include "backends/cpu/image_transform.h"

namespace ringtrain::backends::cpu {
namespace {

// Example `example`'s transform: hz = U(1 + height range) drawn first, then wz =
// U(1 + width range) (or hz when op.zoom_same_aspect); Keras 3's zoom matrix
// [wz, 0, ((W - 1) / 2) (1 - wz), 0, hz, ((H - 1) / 2) (1 - hz), 0, 0] in float.
void DrawZoomTransform(const StepContext& c, const ops::Op& op, int height, int width, int64_t example, float* t) {
  Rng rng = ExampleRng(c, op.key, example);
  const float hz = UniformIn(rng, 1.0 + op.height_factor_lo, 1.0 + op.height_factor_hi);
  const float wz = op.zoom_same_aspect ? hz : UniformIn(rng, 1.0 + op.width_factor_lo, 1.0 + op.width_factor_hi);
  const float half_w = static_cast<float>((static_cast<double>(width) - 1.0) / 2.0);
  const float half_h = static_cast<float>((static_cast<double>(height) - 1.0) / 2.0);
  const float m[8] = {wz, 0.0f, half_w * (1.0f - wz), 0.0f, hz, half_h * (1.0f - hz), 0.0f, 0.0f};
  std::memcpy(t, m, sizeof(m));
}

class RandomZoomKernel final : public CpuKernel {
 public:
  explicit RandomZoomKernel(const ops::Node& node) : label_(node.Label()), op_(node.op), size_(InputSize(node)) {
    sampler_.height = node.input_shapes[0][0];
    sampler_.width = node.input_shapes[0][1];
    sampler_.channels = node.input_shapes[0][2];
    sampler_.fill_mode = node.op.fill_mode;
    sampler_.interpolation = node.op.interpolation;
    fill_row_.assign(static_cast<size_t>(sampler_.channels), node.op.fill_value);
    sink_.assign(static_cast<size_t>(sampler_.channels), 0.0f);
  }

  StatusOr<const float*> Forward(const KernelArgs& args, const std::vector<const float*>& in_list, int batch,
                                 bool training) override {
    active_ = false;
    const float* in = in_list[0];
    if (!training) return in;
    RT_ASSIGN_OR_RETURN(const StepContext* step, TrainingStep(args, label_));
    const size_t n = static_cast<size_t>(size_);
    float* out = EnsureSize(out_, static_cast<size_t>(batch) * n);
    float* t = EnsureSize(transforms_, static_cast<size_t>(batch) * 8);
    for (int b = 0; b < batch; ++b) {
      DrawZoomTransform(*step, op_, sampler_.height, sampler_.width, b, t + static_cast<size_t>(b) * 8);
      sampler_.Forward(t + static_cast<size_t>(b) * 8, in + b * n, fill_row_.data(), out + b * n);
    }
    batch_ = batch;
    active_ = true;
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
    const size_t n = static_cast<size_t>(size_);
    float* d = EnsureSize(din_, static_cast<size_t>(batch_) * n);
    std::memset(d, 0, static_cast<size_t>(batch_) * n * sizeof(float));
    for (int b = 0; b < batch_; ++b) {
      sampler_.AddAdjoint(&transforms_[static_cast<size_t>(b) * 8], dout + b * n, d + b * n, sink_.data());
    }
    (*din)[0] = d;
    return Status::Ok();
  }

 private:
  const std::string label_;
  const ops::Op op_;
  const int64_t size_;
  ProjectiveSampler sampler_;
  bool active_ = false;
  int batch_ = 0;
  std::vector<float> transforms_, fill_row_, sink_, out_, din_;
};

}  // namespace

std::unique_ptr<CpuKernel> NewRandomZoomKernel(const ops::Node& node) { return std::make_unique<RandomZoomKernel>(node); }

}  // namespace ringtrain::backends::cpu
