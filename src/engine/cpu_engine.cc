// The CPU engine: the host nn::Model and nn::Optimizer themselves, on the CPU kernels
// (kernels/kernels.h). The model copies a training batch's input, so the one host
// batch buffer can be refilled as soon as StartStep has run the forward pass.
#include <string>
#include <vector>

#include "engine/engine.h"
#include "kernels/kernels.h"

namespace ringtrain::engine {
namespace {

class CpuEngine final : public Engine {
 public:
  CpuEngine(nn::Model* model, nn::Optimizer* optimizer, int max_batch)
      : model_(model),
        optimizer_(optimizer),
        max_batch_(max_batch),
        images_(static_cast<size_t>(max_batch) * model->input_size()),
        labels_(static_cast<size_t>(max_batch)),
        grad_logits_(static_cast<size_t>(max_batch) * model->num_classes()) {}

  std::string Describe() const override {
    return std::string("CPU (") + kernels::Implementation() + " kernels, " + std::to_string(kernels::NumThreads()) +
           " thread" + (kernels::NumThreads() == 1 ? "" : "s") + ")";
  }
  bool on_gpu() const override { return false; }

  // The engine works on the host objects themselves.
  Status LoadFromHost() override { return Status::Ok(); }
  Status StoreToHost() override { return Status::Ok(); }

  float* next_images() override { return images_.data(); }
  int32_t* next_labels() override { return labels_.data(); }
  Status SubmitBatch(int batch) override {
    if (batch < 1 || batch > max_batch_) {
      return InvalidArgumentError("batch of " + std::to_string(batch) + " examples; this engine takes 1 to " +
                                  std::to_string(max_batch_));
    }
    submitted_ = batch;
    return Status::Ok();
  }

  Status StartStep(float grad_scale) override {
    if (submitted_ == 0) return FailedPreconditionError("StartStep without a submitted batch");
    batch_ = submitted_;
    submitted_ = 0;
    const float* logits = model_->Forward(images_.data(), batch_, /*training=*/true);
    stats_ = nn::SparseSoftmaxCrossEntropy(logits, labels_.data(), batch_, model_->num_classes(), grad_scale,
                                           grad_logits_.data());
    return Status::Ok();
  }

  StatusOr<nn::LossStats> FinishBackward(const std::function<void(size_t)>& on_ready) override {
    if (batch_ == 0) return FailedPreconditionError("FinishBackward without StartStep");
    model_->Backward(grad_logits_.data(), on_ready);
    batch_ = 0;
    return stats_;
  }

  float* GradientBuffer(const collective::Communicator& comm) override {
    num_replicas_ = comm.size();
    return model_->grads();
  }

  Status ApplyUpdate() override {
    optimizer_->Apply(model_->params(), model_->grads(), model_->num_trainable());
    model_->ApplyReducedStats(num_replicas_);
    return Status::Ok();
  }

  StatusOr<nn::LossStats> Evaluate(const float* images, const int32_t* labels, int batch) override {
    const float* logits = model_->Forward(images, batch, /*training=*/false);
    return nn::SparseSoftmaxCrossEntropy(logits, labels, batch, model_->num_classes(), 0.0f, nullptr);
  }

 private:
  nn::Model* model_;
  nn::Optimizer* optimizer_;
  const int max_batch_;
  std::vector<float> images_;
  std::vector<int32_t> labels_;
  std::vector<float> grad_logits_;
  int submitted_ = 0;  // examples in images_/labels_ not yet started
  int batch_ = 0;      // examples of the step between StartStep and FinishBackward
  int num_replicas_ = 1;  // of the all-reduce GradientBuffer was asked for
  nn::LossStats stats_;
};

}  // namespace

std::unique_ptr<Engine> NewCpuEngine(nn::Model* model, nn::Optimizer* optimizer, int max_batch) {
  return std::make_unique<CpuEngine>(model, optimizer, max_batch);
}

}  // namespace ringtrain::engine
