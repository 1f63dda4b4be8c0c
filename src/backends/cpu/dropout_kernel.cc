// Dropout on the CPU: in a training Forward with rate > 0, element i of the batch is
// kept with probability 1 - rate and scaled by op.dropout_scale, else zeroed; the mask
// comes from the step's stream (DropoutStreamKey, DropoutKeep: backends/cpu/augment_draws.h).
// Inference and rate 0 are the identity: the input pointer passes through, and so does
// the output gradient. Backward multiplies by the same mask.
#include "backends/cpu/augment_draws.h"
#include "backends/cpu/cpu_kernel.h"

namespace ringtrain::backends::cpu {
namespace {

class DropoutKernel final : public CpuKernel {
 public:
  explicit DropoutKernel(const ops::Node& node)
      : label_(node.Label()),
        rate_(node.op.rate),
        scale_(node.op.dropout_scale),
        name_hash_(node.op.name_hash),
        layer_seed_(node.op.layer_seed),
        input_size_(InputSize(node)) {}

  StatusOr<const float*> Forward(const KernelArgs& args, const std::vector<const float*>& in, int batch,
                                 bool training) override {
    masked_ = false;
    if (!(training && rate_ > 0.0f)) return in[0];
    RT_ASSIGN_OR_RETURN(const StepContext* step, TrainingStep(args, label_));
    masked_ = true;
    const size_t n = static_cast<size_t>(batch) * static_cast<size_t>(input_size_);
    batch_elements_ = n;
    float* out = EnsureSize(out_, n);
    float* mask = EnsureSize(mask_, n);
    const StepContext& c = *step;
    const uint64_t key = DropoutStreamKey(c.seed, c.step, c.replica, name_hash_, layer_seed_);
    for (size_t i = 0; i < n; ++i) mask[i] = DropoutKeep(key, i, rate_) ? scale_ : 0.0f;
    const float* x = in[0];
    for (size_t i = 0; i < n; ++i) out[i] = x[i] * mask[i];
    return out;
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
    const size_t n = batch_elements_;  // of the last Forward (mask_ may hold more)
    float* din = EnsureSize(din_, n);
    for (size_t i = 0; i < n; ++i) din[i] = dout[i] * mask_[i];
    return din;
  }

  const std::string label_;
  const float rate_;
  const float scale_;  // 1 / (1 - rate) as the layer rounds it
  const uint64_t name_hash_, layer_seed_;
  const int64_t input_size_;
  bool masked_ = false;        // the last Forward applied a mask (training, rate > 0)
  size_t batch_elements_ = 0;  // elements of the last masked Forward
  std::vector<float> mask_;    // 0 or scale_ per element, of the last masked Forward
  std::vector<float> out_, din_;
};

}  // namespace

std::unique_ptr<CpuKernel> NewDropoutKernel(const ops::Node& node) { return std::make_unique<DropoutKernel>(node); }

uint64_t DropoutScratchFloatsPerExample(const ops::Node& node, bool training) {
  return training ? static_cast<uint64_t>(InputSize(node)) : 0;  // the mask
}

}  // namespace ringtrain::backends::cpu
