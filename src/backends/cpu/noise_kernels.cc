// SpatialDropout2D and GaussianNoise on the CPU (nn/layers/noise_layers.h). Both pass the
// input through in inference (and SpatialDropout2D with rate 0, GaussianNoise with
// stddev 0), and the output gradient likewise.
//   SpatialDropout2D: channel c of example b is kept when DropoutKeep(key, b * C + c,
//     rate) (backends/cpu/augment_draws.h; key = DropoutStreamKey of the step and the
//     layer), a kept channel scaled by op.dropout_scale; Backward multiplies by the mask.
//   GaussianNoise: y = x + GaussianDraw(key, i) * stddev (backends/cpu/noise_draws.h);
//     Backward is the identity.
#include "backends/cpu/augment_draws.h"
#include "backends/cpu/cpu_kernel.h"
#include "backends/cpu/noise_draws.h"

namespace ringtrain::backends::cpu {
namespace {

class SpatialDropoutKernel final : public CpuKernel {
 public:
  explicit SpatialDropoutKernel(const ops::Node& node)
      : label_(node.Label()), op_(node.op), size_(InputSize(node)), channels_(node.input_shapes[0].back()) {}

  StatusOr<const float*> Forward(const KernelArgs& args, const std::vector<const float*>& inputs, int batch,
                                 bool training) override {
    const float* in = inputs[0];
    masked_ = false;
    if (!(training && op_.rate > 0.0f)) return in;
    RT_ASSIGN_OR_RETURN(const StepContext* step, TrainingStep(args, label_));
    const StepContext& c = *step;
    const uint64_t key = DropoutStreamKey(c.seed, c.step, c.replica, op_.name_hash, op_.layer_seed);
    const size_t masks = static_cast<size_t>(batch) * static_cast<size_t>(channels_);
    float* mask = EnsureSize(mask_, masks);
    for (size_t m = 0; m < masks; ++m) mask[m] = DropoutKeep(key, m, op_.rate) ? op_.dropout_scale : 0.0f;
    const size_t n = static_cast<size_t>(batch) * static_cast<size_t>(size_);
    float* out = EnsureSize(out_, n);
    const size_t per_example = static_cast<size_t>(size_);
    for (size_t i = 0; i < n; ++i) {
      out[i] = in[i] * mask[(i / per_example) * static_cast<size_t>(channels_) + i % static_cast<size_t>(channels_)];
    }
    masked_ = true;
    elements_ = n;
    return static_cast<const float*>(out);
  }

  Status Backward(const KernelArgs&, const float* dout, const std::vector<bool>& need_din,
                  std::vector<const float*>* din) override {
    (*din)[0] = BackwardOne(dout, need_din[0]);
    return Status::Ok();
  }

 private:
  const float* BackwardOne(const float* dout, bool need_din) {
    if (!need_din) return nullptr;
    if (!masked_) return dout;
    float* din = EnsureSize(din_, elements_);
    const size_t per_example = static_cast<size_t>(size_);
    for (size_t i = 0; i < elements_; ++i) {
      din[i] = dout[i] * mask_[(i / per_example) * static_cast<size_t>(channels_) + i % static_cast<size_t>(channels_)];
    }
    return din;
  }

  const std::string label_;
  const ops::Op op_;
  const int64_t size_;
  const int channels_;
  bool masked_ = false;
  size_t elements_ = 0;
  std::vector<float> mask_, out_, din_;
};

class GaussianNoiseKernel final : public CpuKernel {
 public:
  explicit GaussianNoiseKernel(const ops::Node& node) : label_(node.Label()), op_(node.op), size_(InputSize(node)) {}

  StatusOr<const float*> Forward(const KernelArgs& args, const std::vector<const float*>& inputs, int batch,
                                 bool training) override {
    const float* in = inputs[0];
    if (!(training && op_.stddev > 0.0f)) return in;
    RT_ASSIGN_OR_RETURN(const StepContext* step, TrainingStep(args, label_));
    const StepContext& c = *step;
    const uint64_t key = DropoutStreamKey(c.seed, c.step, c.replica, op_.name_hash, op_.layer_seed);
    const size_t n = static_cast<size_t>(batch) * static_cast<size_t>(size_);
    float* out = EnsureSize(out_, n);
    for (size_t i = 0; i < n; ++i) out[i] = in[i] + GaussianDraw(key, i) * op_.stddev;
    return static_cast<const float*>(out);
  }

  // d(x + noise)/dx = 1: the output gradient itself.
  Status Backward(const KernelArgs&, const float* dout, const std::vector<bool>& need_din,
                  std::vector<const float*>* din) override {
    (*din)[0] = need_din[0] ? dout : nullptr;
    return Status::Ok();
  }

 private:

  const std::string label_;
  const ops::Op op_;
  const int64_t size_;
  std::vector<float> out_;
};

}  // namespace

std::unique_ptr<CpuKernel> NewSpatialDropout2DKernel(const ops::Node& node) {
  return std::make_unique<SpatialDropoutKernel>(node);
}
std::unique_ptr<CpuKernel> NewGaussianNoiseKernel(const ops::Node& node) {
  return std::make_unique<GaussianNoiseKernel>(node);
}

}  // namespace ringtrain::backends::cpu
