// The CPU engine: the host nn::Model and nn::Optimizer themselves, on the CPU kernels
// (kernels/kernels.h). The model copies a training batch's input, so the one host
// batch buffer can be refilled as soon as StartStep has run the forward pass. It
// computes every loss, metric and regularizer the objective and the model name.
#include <algorithm>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "kernels/kernels.h"
#include "nn/model_regularization.h"

namespace ringtrain::engine {
namespace {

class CpuEngine final : public Engine {
 public:
  CpuEngine(nn::Model* model, nn::Optimizer* optimizer, int max_batch)
      : model_(model),
        optimizer_(optimizer),
        max_batch_(max_batch),
        images_(static_cast<size_t>(max_batch) * model->input_size()),
        labels_(static_cast<size_t>(max_batch) * model->output_positions()),
        grad_logits_(static_cast<size_t>(max_batch) * model->output_size()),
        default_objective_(Objective::Default(model->num_classes(), model->output_positions())),
        objective_(&default_objective_),
        regularized_(nn::HasRegularization(*model)) {}

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

  Status SetObjective(const Objective* objective) override {
    if (batch_ != 0) return FailedPreconditionError("SetObjective between StartStep and FinishBackward");
    // Rows of the output: the model's (positions x classes), or one target per output value
    // (positions = output_size, one output each: multi-hot and per-value targets).
    const size_t outputs = static_cast<size_t>(objective->loss().num_outputs());
    const bool per_class = outputs == static_cast<size_t>(model_->num_classes()) &&
                           objective->positions() == model_->output_positions();
    const bool per_value = outputs == 1 && objective->positions() == model_->output_size();
    if (objective->several_outputs()) {
      // Each output's part of the row is the objective's to find (Objective::OutputLayout).
      if (objective->output_size() != model_->output_size()) {
        return InvalidArgumentError("the loss was made for outputs of " + std::to_string(objective->output_size()) +
                                    " values per example but the model's outputs hold " +
                                    std::to_string(model_->output_size()));
      }
    } else if (!per_class && !per_value) {
      return InvalidArgumentError("the loss was made for " + std::to_string(objective->positions()) + " x " +
                                  std::to_string(outputs) + " outputs per example but the model's output has " +
                                  std::to_string(model_->output_positions()) + " x " +
                                  std::to_string(model_->num_classes()));
    }
    labels_.resize(static_cast<size_t>(max_batch_) * objective->label_size());
    objective_ = objective;
    return Status::Ok();
  }

  Status StartStep(float grad_scale) override {
    if (submitted_ == 0) return FailedPreconditionError("StartStep without a submitted batch");
    batch_ = submitted_;
    submitted_ = 0;
    const float* outputs = model_->Forward(images_.data(), batch_, /*training=*/true);
    stats_ = Stats(outputs, labels_.data(), batch_, grad_scale, grad_logits_.data());
    return Status::Ok();
  }

  StatusOr<BatchStats> FinishBackward(const std::function<void(size_t)>& on_ready) override {
    if (batch_ == 0) return FailedPreconditionError("FinishBackward without StartStep");
    if (!regularized_) {
      model_->Backward(grad_logits_.data(), on_ready);
    } else {
      // Each range's penalty gradient joins it as soon as Backward has made it final,
      // before on_ready hands it to the all-reduce.
      const float scale = 1.0f / static_cast<float>(num_replicas_);
      size_t end = model_->num_trainable();
      model_->Backward(grad_logits_.data(), [&](size_t offset) {
        if (offset < end) nn::AddRegularizationGradients(model_, offset, end, scale);
        end = std::min(end, offset);
        if (on_ready) on_ready(offset);
      });
    }
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

  StatusOr<BatchStats> Evaluate(const float* images, const int32_t* labels, int batch) override {
    const float* outputs = model_->Forward(images, batch, /*training=*/false);
    return Stats(outputs, labels, batch, 0.0f, nullptr);
  }

 private:
  // The loss (and its gradient into `grad` when not null), the regularization penalty
  // and the metrics of a batch whose outputs the model just computed.
  BatchStats Stats(const float* outputs, const int32_t* labels, int batch, float grad_scale, float* grad) {
    BatchStats s;
    s.loss_sum = objective_->LossSum(outputs, labels, batch, grad_scale, grad);
    if (regularized_) s.loss_sum += static_cast<double>(batch) * nn::RegularizationPenalty(*model_);
    s.metric_sums.assign(static_cast<size_t>(objective_->num_sums()), 0.0);
    objective_->Accumulate(outputs, labels, batch, s.metric_sums.data());
    return s;
  }

  nn::Model* model_;
  nn::Optimizer* optimizer_;
  const int max_batch_;
  std::vector<float> images_;
  std::vector<int32_t> labels_;
  std::vector<float> grad_logits_;
  int submitted_ = 0;  // examples in images_/labels_ not yet started
  int batch_ = 0;      // examples of the step between StartStep and FinishBackward
  int num_replicas_ = 1;  // of the all-reduce GradientBuffer was asked for
  Objective default_objective_;
  const Objective* objective_;  // default_objective_ or SetObjective's
  const bool regularized_;      // some weight has a regularizer
  BatchStats stats_;
};

}  // namespace

std::unique_ptr<Engine> NewCpuEngine(nn::Model* model, nn::Optimizer* optimizer, int max_batch) {
  return std::make_unique<CpuEngine>(model, optimizer, max_batch);
}

}  // namespace ringtrain::engine
