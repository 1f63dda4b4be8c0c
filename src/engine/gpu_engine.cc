// The GPU engine (engine/gpu_engine.h): the model's op graph run by the one executor
// (executor/executor.h) on the CUDA backend (backends/cuda), on one compute stream, with
// the model's parameters, gradients and optimizer slots in device memory for the
// engine's lifetime.
//
// Streams and events:
//   copy stream    SubmitBatch: H2D of a pinned host slot into the matching device
//                  slot, after `free` of that slot (the step that last read it), then
//                  records `copied`.
//   compute stream StartStep waits for `copied`, runs forward, loss and metrics (their
//                  sums copied down by GpuObjective), backward, then records the slot's
//                  `free`. FinishBackward adds the regularization gradient, copies the
//                  gradients down for a host communicator, and waits for `done_`.
// The host fills pinned slot s^1 while the step on slot s computes; SubmitBatch waits
// (bounded) for the previous copy out of a pinned slot before handing it out again.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "common/logging.h"
#include "backends/cuda/cuda_status.h"
#include "backends/cuda/device_buffer.h"
#include "backends/cuda/gpu_context.h"
#include "engine/gpu_engine.h"
#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/gpu_kernels.h"
#include "backends/cuda/objective_kernels.h"
#include "backends/cuda/optimizer_kernels.h"
#include "executor/executor.h"

namespace ringtrain::gpu {
namespace {

// One input batch slot: pinned host memory the trainer fills, device memory a step reads.
struct InputSlot {
  PinnedBuffer<float> host_images;
  PinnedBuffer<int32_t> host_labels;
  DeviceBuffer<float> images;
  DeviceBuffer<int32_t> labels;
  Event copied;  // the H2D copy into `images`/`labels` is done
  Event free;    // the step that read `images`/`labels` is done
};

class GpuEngine final : public engine::Engine {
 public:
  GpuEngine(nn::Model* model, nn::Optimizer* optimizer, int max_batch, std::unique_ptr<GpuContext> ctx)
      : ctx_(std::move(ctx)),
        model_(model),
        optimizer_(optimizer),
        max_batch_(max_batch),
        n_(model->num_params()),
        trainable_(model->num_trainable()),
        grad_floats_(std::max(model->num_params(), model->num_reduced())),
        in_size_(model->input_size()),
        classes_(model->num_classes()),
        positions_(model->output_positions()),
        id_(ctx_->ordinal()) {}

  ~GpuEngine() override {
    // Queued kernels may still use the buffers the members free below.
    ctx_->Drain(10);
  }

  Status Init() {
    // The plan: an op the CUDA backend lacks is refused here, naming the layer, the op
    // and the device.
    backend_ = NewCudaBackend(ctx_.get());
    RT_ASSIGN_OR_RETURN(exec_, executor::Executor::Create(model_->graph(), backend_.get(), executor::PlanOptions{}));
    RT_RETURN_IF_ERROR(params_.Allocate(n_, "parameters", id_));
    RT_RETURN_IF_ERROR(grads_.Allocate(grad_floats_, "gradients", id_));
    RT_RETURN_IF_ERROR(host_grads_.Allocate(grad_floats_, "pinned gradient mirror", id_));
    if (n_ > 0) {
      RT_RETURN_IF_ERROR(CudaCheck(cudaMemsetAsync(grads_.get(), 0, grads_.bytes(), ctx_->compute()),
                                   "cudaMemsetAsync(gradients)", id_));
    }
    // The optimizer's update (with its slots), the weight regularization and the loss and
    // metrics, on the device.
    RT_ASSIGN_OR_RETURN(optimizer_gpu_,
                        GpuOptimizer::Create(optimizer_, trainable_, model_->param_infos(), ctx_.get()));
    RT_ASSIGN_OR_RETURN(regularization_, GpuRegularization::Create(model_->param_infos(), ctx_.get()));
    RT_ASSIGN_OR_RETURN(objective_gpu_, GpuObjective::Create(default_objective_, classes_, ctx_.get()));
    const size_t images = static_cast<size_t>(max_batch_) * in_size_;
    for (InputSlot& s : inputs_) {
      RT_RETURN_IF_ERROR(s.host_images.Allocate(images, "pinned input images", id_));
      RT_RETURN_IF_ERROR(s.host_labels.Allocate(Rows(max_batch_), "pinned input labels", id_));
      RT_RETURN_IF_ERROR(s.images.Allocate(images, "input images", id_));
      RT_RETURN_IF_ERROR(s.labels.Allocate(Rows(max_batch_), "input labels", id_));
      RT_RETURN_IF_ERROR(s.copied.Create(id_));
      RT_RETURN_IF_ERROR(s.free.Create(id_));
    }
    RT_RETURN_IF_ERROR(penalty_.Allocate(1, "regularization penalty", id_));
    RT_RETURN_IF_ERROR(host_penalty_.Allocate(1, "pinned regularization penalty", id_));
    RT_RETURN_IF_ERROR(done_.Create(id_));
    RT_RETURN_IF_ERROR(EnsureBatch(max_batch_));
    return LoadFromHost();
  }

  // A step that failed between StartStep and FinishBackward (e.g. a deadline) leaves
  // in_step_ set. Its update never ran, so the weights are those before it: after the
  // queued work is done, loading or storing them is safe, and the step is forgotten,
  // so that recovery in place can train again with this engine.
  Status DropUnfinishedStep(const std::string& what) {
    if (!in_step_) return Status::Ok();
    RT_RETURN_IF_ERROR(ctx_->SyncCompute("the unfinished step, before " + what));
    in_step_ = false;
    RT_LOG(WARNING) << "GPU " << id_ << ": an unfinished training step was dropped before " << what;
    return Status::Ok();
  }

  std::string Describe() const override { return ctx_->Describe(); }
  bool on_gpu() const override { return true; }

  Status LoadFromHost() override {
    RT_RETURN_IF_ERROR(ctx_->MakeCurrent());
    RT_RETURN_IF_ERROR(DropUnfinishedStep("loading the weights"));
    // Pageable copies: the stream must be idle for them to return promptly.
    RT_RETURN_IF_ERROR(ctx_->SyncCompute("GPU work before loading the weights"));
    if (n_ > 0) {
      RT_RETURN_IF_ERROR(CudaCheck(cudaMemcpyAsync(params_.get(), model_->params(), params_.bytes(),
                                                   cudaMemcpyHostToDevice, ctx_->compute()),
                                   "cudaMemcpyAsync(parameters to the GPU)", id_));
    }
    // Slots of the wrong size (or none yet) start from their initial values, as the CPU
    // optimizers' do.
    RT_RETURN_IF_ERROR(optimizer_gpu_->ResetSlots());
    auto state = optimizer_->state();
    const std::vector<float*> slots = optimizer_gpu_->slots();
    for (size_t i = 0; i < slots.size() && i < state.size(); ++i) {
      const std::vector<float>& host = *state[i].second;
      if (host.size() == trainable_ && trainable_ > 0) {
        RT_RETURN_IF_ERROR(CudaCheck(cudaMemcpyAsync(slots[i], host.data(), trainable_ * sizeof(float),
                                                     cudaMemcpyHostToDevice, ctx_->compute()),
                                     "cudaMemcpyAsync(optimizer slot '" + state[i].first + "' to the GPU)", id_));
      } else if (!host.empty()) {
        RT_LOG(ERROR) << "optimizer slot '" << state[i].first << "' has " << host.size()
                      << " values but the model has " << trainable_ << "; restarting it";
      }
    }
    return ctx_->SyncCompute("loading the weights and optimizer state");
  }

  Status StoreToHost() override {
    RT_RETURN_IF_ERROR(ctx_->MakeCurrent());
    RT_RETURN_IF_ERROR(DropUnfinishedStep("storing the weights"));
    // Copies into pageable memory return only when done: wait (bounded) for the stream first.
    RT_RETURN_IF_ERROR(ctx_->SyncCompute("GPU work before storing the weights"));
    if (n_ > 0) {
      RT_RETURN_IF_ERROR(CudaCheck(cudaMemcpyAsync(model_->params(), params_.get(), params_.bytes(),
                                                   cudaMemcpyDeviceToHost, ctx_->compute()),
                                   "cudaMemcpyAsync(parameters to the host)", id_));
    }
    auto state = optimizer_->state();
    const std::vector<float*> slots = optimizer_gpu_->slots();
    for (size_t i = 0; i < slots.size() && i < state.size(); ++i) {
      std::vector<float>& host = *state[i].second;
      host.resize(trainable_);
      if (trainable_ == 0) continue;
      RT_RETURN_IF_ERROR(CudaCheck(cudaMemcpyAsync(host.data(), slots[i], trainable_ * sizeof(float),
                                                   cudaMemcpyDeviceToHost, ctx_->compute()),
                                   "cudaMemcpyAsync(optimizer slot '" + state[i].first + "' to the host)", id_));
    }
    return ctx_->SyncCompute("storing the weights and optimizer state");
  }

  float* next_images() override { return inputs_[host_slot_].host_images.get(); }
  int32_t* next_labels() override { return inputs_[host_slot_].host_labels.get(); }

  Status SubmitBatch(int batch) override {
    RT_RETURN_IF_ERROR(ctx_->MakeCurrent());
    if (batch < 1 || batch > max_batch_) {
      return InvalidArgumentError("batch of " + std::to_string(batch) + " examples; this engine takes 1 to " +
                                  std::to_string(max_batch_));
    }
    InputSlot& s = inputs_[host_slot_];
    cudaStream_t copy = ctx_->copy();
    RT_RETURN_IF_ERROR(CudaCheck(cudaStreamWaitEvent(copy, s.free.get(), 0), "cudaStreamWaitEvent(input slot)", id_));
    RT_RETURN_IF_ERROR(CudaCheck(cudaMemcpyAsync(s.images.get(), s.host_images.get(),
                                                 static_cast<size_t>(batch) * in_size_ * sizeof(float),
                                                 cudaMemcpyHostToDevice, copy),
                                 "cudaMemcpyAsync(input images)", id_));
    RT_RETURN_IF_ERROR(CudaCheck(cudaMemcpyAsync(s.labels.get(), s.host_labels.get(), Rows(batch) * sizeof(int32_t),
                                                 cudaMemcpyHostToDevice, copy),
                                 "cudaMemcpyAsync(input labels)", id_));
    RT_RETURN_IF_ERROR(CudaCheck(cudaEventRecord(s.copied.get(), copy), "cudaEventRecord(input copied)", id_));
    submitted_slot_ = host_slot_;
    submitted_batch_ = batch;
    host_slot_ ^= 1;
    // The host is about to refill the other pinned slot: its last copy must be done
    // (in the trainer's order it finished before the previous step did).
    return ctx_->Wait(inputs_[host_slot_].copied.get(), Deadline::AfterSeconds(GpuContext::kWaitSeconds),
                      "the copy of an input batch");
  }

  // The loss and metrics run on the GPU (backends/cuda/objective_kernels.h); one it
  // cannot compute is refused naming it, and the previous objective stays.
  Status SetObjective(const engine::Objective* objective) override {
    if (in_step_) return FailedPreconditionError("SetObjective between StartStep and FinishBackward");
    RT_RETURN_IF_ERROR(ctx_->MakeCurrent());
    if (objective->several_outputs()) {
      return InvalidArgumentError("a model with several outputs trains on the CPU for now (\"device\": \"cpu\"); "
                                  "the GPU engine computes one output's loss")
          .About(Subject::kConfig);
    }
    if (objective->positions() != positions_) {
      return InvalidArgumentError("the loss was made for " + std::to_string(objective->positions()) +
                                  " label(s) per example but the GPU engine takes one per position of the model's "
                                  "output, " + std::to_string(positions_) +
                                  " (a target per output value, e.g. multi-hot, runs on the CPU for now)");
    }
    auto made = GpuObjective::Create(*objective, classes_, ctx_.get());
    if (!made.ok()) return InvalidArgumentError(made.status().message()).About(Subject::kConfig);
    RT_RETURN_IF_ERROR((*made)->Reserve(static_cast<int>(Rows(capacity_))));
    objective_gpu_ = std::move(made).value();
    objective_ = objective;
    return Status::Ok();
  }

  Status StartStep(float grad_scale) override {
    RT_RETURN_IF_ERROR(ctx_->MakeCurrent());
    if (in_step_) return FailedPreconditionError("StartStep twice without FinishBackward");
    if (submitted_batch_ == 0) return FailedPreconditionError("StartStep without a submitted batch");
    const int batch = submitted_batch_;
    InputSlot& s = inputs_[submitted_slot_];
    submitted_batch_ = 0;
    step_batch_ = batch;
    RT_RETURN_IF_ERROR(EnsureBatch(batch));
    cudaStream_t compute = ctx_->compute();
    RT_RETURN_IF_ERROR(
        CudaCheck(cudaStreamWaitEvent(compute, s.copied.get(), 0), "cudaStreamWaitEvent(input copied)", id_));
    RT_ASSIGN_OR_RETURN(const float* logits, RunForward(s.images.get(), batch, /*training=*/true));
    RT_RETURN_IF_ERROR(objective_gpu_->Run(logits, s.labels.get(), static_cast<int>(Rows(batch)),
                                           objective_->RowGradScale(grad_scale),
                                           grad_logits_.get()));
    RT_RETURN_IF_ERROR(EnqueuePenalty());  // of the weights this batch ran with
    RT_RETURN_IF_ERROR(exec_->Backward(Args(), grad_logits_.get(), nullptr));
    RT_RETURN_IF_ERROR(CudaCheck(cudaEventRecord(s.free.get(), compute), "cudaEventRecord(input slot free)", id_));
    in_step_ = true;
    return Status::Ok();
  }

  StatusOr<engine::BatchStats> FinishBackward(const std::function<void(size_t)>& on_ready) override {
    RT_RETURN_IF_ERROR(ctx_->MakeCurrent());
    if (!in_step_) return FailedPreconditionError("FinishBackward without StartStep");
    in_step_ = false;
    cudaStream_t compute = ctx_->compute();
    // The penalty's gradient joins the trainable gradients before the all-reduce, scaled
    // so that the sum carries it once (as the CPU engine does).
    RT_RETURN_IF_ERROR(regularization_->AddGradients(params_.get(), grads_.get(), 0, trainable_,
                                                     1.0f / static_cast<float>(num_replicas_)));
    if (host_grads_mode_ && n_ > 0) {
      RT_RETURN_IF_ERROR(CudaCheck(cudaMemcpyAsync(host_grads_.get(), grads_.get(), grads_.bytes(),
                                                   cudaMemcpyDeviceToHost, compute),
                                   "cudaMemcpyAsync(gradients to the host)", id_));
    }
    RT_RETURN_IF_ERROR(CudaCheck(cudaEventRecord(done_.get(), compute), "cudaEventRecord(step done)", id_));
    RT_RETURN_IF_ERROR(ctx_->Wait(done_.get(), Deadline::AfterSeconds(GpuContext::kWaitSeconds),
                                  "the training step's forward and backward pass"));
    if (on_ready) on_ready(0);
    return Stats(step_batch_);
  }

  float* GradientBuffer(const collective::Communicator& comm) override {
    host_grads_mode_ = !comm.accepts_device_memory();
    num_replicas_ = comm.size();
    return host_grads_mode_ ? host_grads_.get() : grads_.get();
  }

  Status ApplyUpdate() override {
    RT_RETURN_IF_ERROR(ctx_->MakeCurrent());
    if (in_step_) return FailedPreconditionError("ApplyUpdate between StartStep and FinishBackward");
    cudaStream_t compute = ctx_->compute();
    if (host_grads_mode_ && n_ > 0) {
      RT_RETURN_IF_ERROR(CudaCheck(cudaMemcpyAsync(grads_.get(), host_grads_.get(), grads_.bytes(),
                                                   cudaMemcpyHostToDevice, compute),
                                   "cudaMemcpyAsync(reduced gradients to the GPU)", id_));
    }
    RT_RETURN_IF_ERROR(optimizer_gpu_->Apply(params_.get(), grads_.get()));
    // The moving statistics from the all-reduced batch statistics, as the CPU engine does.
    RT_RETURN_IF_ERROR(exec_->ApplyReducedStats(Args(), num_replicas_));
    optimizer_->set_iterations(optimizer_->iterations() + 1);
    return Status::Ok();
  }

  StatusOr<engine::BatchStats> Evaluate(const float* images, const int32_t* labels, int batch) override {
    RT_RETURN_IF_ERROR(ctx_->MakeCurrent());
    if (in_step_) return FailedPreconditionError("Evaluate between StartStep and FinishBackward");
    if (batch < 0) return InvalidArgumentError("Evaluate on " + std::to_string(batch) + " examples");
    if (batch == 0) {
      engine::BatchStats empty;
      empty.metric_sums.assign(static_cast<size_t>(objective_gpu_->num_sums()), 0.0);
      return empty;
    }
    RT_RETURN_IF_ERROR(EnsureBatch(batch));
    // Only Evaluate uses these, and it waits for its work: growing them is safe.
    RT_RETURN_IF_ERROR(eval_images_.Grow(static_cast<size_t>(batch) * in_size_, "evaluation images", id_));
    RT_RETURN_IF_ERROR(eval_labels_.Grow(Rows(batch), "evaluation labels", id_));
    cudaStream_t compute = ctx_->compute();
    RT_RETURN_IF_ERROR(CudaCheck(cudaMemcpyAsync(eval_images_.get(), images,
                                                 static_cast<size_t>(batch) * in_size_ * sizeof(float),
                                                 cudaMemcpyHostToDevice, compute),
                                 "cudaMemcpyAsync(evaluation images)", id_));
    RT_RETURN_IF_ERROR(CudaCheck(cudaMemcpyAsync(eval_labels_.get(), labels, Rows(batch) * sizeof(int32_t),
                                                 cudaMemcpyHostToDevice, compute),
                                 "cudaMemcpyAsync(evaluation labels)", id_));
    RT_ASSIGN_OR_RETURN(const float* logits, RunForward(eval_images_.get(), batch, /*training=*/false));
    RT_RETURN_IF_ERROR(objective_gpu_->Run(logits, eval_labels_.get(), static_cast<int>(Rows(batch)), 0.0f, nullptr));
    RT_RETURN_IF_ERROR(EnqueuePenalty());
    RT_RETURN_IF_ERROR(CudaCheck(cudaEventRecord(done_.get(), compute), "cudaEventRecord(evaluation done)", id_));
    RT_RETURN_IF_ERROR(
        ctx_->Wait(done_.get(), Deadline::AfterSeconds(GpuContext::kWaitSeconds), "the evaluation pass"));
    return Stats(batch);
  }

 private:
  backends::KernelArgs Args() const {
    backends::KernelArgs a;
    a.params = params_.get();
    a.grads = grads_.get();
    a.workspace = workspace_.get();
    a.workspace_bytes = workspace_.bytes();
    a.step = &model_->step_context();
    return a;
  }

  // Buffers for `batch` examples and the algorithms for that batch size. Growing a
  // buffer frees the old one, so queued work is waited for first.
  Status EnsureBatch(int batch) {
    if (batch > capacity_) {
      RT_RETURN_IF_ERROR(ctx_->SyncCompute("GPU work before growing the buffers"));
      RT_RETURN_IF_ERROR(grad_logits_.Grow(Rows(batch) * classes_, "logit gradients", id_));
      RT_RETURN_IF_ERROR(objective_gpu_->Reserve(static_cast<int>(Rows(batch))));
      capacity_ = batch;
    }
    // The kernels' buffers grow only with the batch (waited for above).
    RT_ASSIGN_OR_RETURN(size_t workspace, exec_->Prepare(batch));
    if (workspace > workspace_.bytes()) {
      RT_RETURN_IF_ERROR(ctx_->SyncCompute("GPU work before growing the cuDNN workspace"));
      RT_RETURN_IF_ERROR(workspace_.Allocate(workspace, "cuDNN workspace", id_));
    }
    return Status::Ok();
  }

  StatusOr<const float*> RunForward(const float* x, int batch, bool training) {
    return exec_->Forward(Args(), x, batch, training);
  }

  // The regularization penalty of the current weights into host_penalty_, on the compute
  // stream (nothing without a regularizer).
  Status EnqueuePenalty() {
    if (!regularization_->active()) return Status::Ok();
    RT_RETURN_IF_ERROR(regularization_->Penalty(params_.get(), penalty_.get()));
    return CudaCheck(cudaMemcpyAsync(host_penalty_.get(), penalty_.get(), sizeof(double), cudaMemcpyDeviceToHost,
                                     ctx_->compute()),
                     "cudaMemcpyAsync(regularization penalty)", id_);
  }

  // Label rows (and loss rows) of `batch` examples.
  size_t Rows(int batch) const { return static_cast<size_t>(batch) * positions_; }

  // After the compute stream finished the batch: its loss and metric sums; the reported
  // loss includes batch * the regularization penalty, as Keras' does.
  StatusOr<engine::BatchStats> Stats(int batch) const {
    RT_ASSIGN_OR_RETURN(engine::BatchStats stats, objective_gpu_->Collect());
    stats.loss_sum = objective_->ExampleLossSum(stats.loss_sum);
    if (regularization_->active()) stats.loss_sum += static_cast<double>(batch) * host_penalty_.get()[0];
    return stats;
  }

  std::unique_ptr<GpuContext> ctx_;  // first: destroyed after every buffer below
  nn::Model* model_;
  nn::Optimizer* optimizer_;
  const int max_batch_;
  const size_t n_;
  const size_t trainable_;  // the optimizer updates params_[0, trainable_)
  // The gradient buffer: every weight's slot (the trainable prefix is written), and the
  // reduced statistics after the gradients.
  const size_t grad_floats_;
  const size_t in_size_;
  const int classes_;
  const size_t positions_;  // label rows per example (nn::Model::output_positions)
  const int id_;

  std::unique_ptr<backends::Backend> backend_;
  std::unique_ptr<executor::Executor> exec_;
  int capacity_ = 0;  // examples the kernels' buffers hold

  DeviceBuffer<float> params_, grads_;
  std::unique_ptr<GpuOptimizer> optimizer_gpu_;        // the update and its slots
  std::unique_ptr<GpuRegularization> regularization_;  // the weights' penalty and its gradient
  PinnedBuffer<float> host_grads_;          // for host communicators (RING)
  bool host_grads_mode_ = false;            // GradientBuffer last returned host_grads_
  int num_replicas_ = 1;                    // of the communicator GradientBuffer was asked for
  DeviceBuffer<unsigned char> workspace_;   // cuDNN
  DeviceBuffer<float> grad_logits_;
  DeviceBuffer<double> penalty_;       // the regularization penalty of the last batch's weights
  PinnedBuffer<double> host_penalty_;
  Event done_;

  InputSlot inputs_[2];
  int host_slot_ = 0;        // the pinned slot next_images() hands out
  int submitted_slot_ = 0;
  int submitted_batch_ = 0;  // 0: nothing submitted since the last StartStep
  bool in_step_ = false;     // between StartStep and FinishBackward
  int step_batch_ = 0;       // examples of the step StartStep began
  // The loss and metrics: Objective::Default until SetObjective.
  engine::Objective default_objective_ = engine::Objective::Default(classes_, positions_);
  const engine::Objective* objective_ = &default_objective_;  // the one objective_gpu_ was made from
  std::unique_ptr<GpuObjective> objective_gpu_;
  DeviceBuffer<float> eval_images_;
  DeviceBuffer<int32_t> eval_labels_;
};

}  // namespace

StatusOr<std::unique_ptr<engine::Engine>> NewGpuEngine(nn::Model* model, nn::Optimizer* optimizer, int max_batch,
                                                       int ordinal) {
  if (model == nullptr || optimizer == nullptr) return InvalidArgumentError("NewGpuEngine needs a model and an optimizer");
  if (max_batch < 1) {
    return InvalidArgumentError("NewGpuEngine: max_batch must be positive, got " + std::to_string(max_batch));
  }
  // What the GPU cannot run (an op, a loss, a metric, an optimizer option) is refused
  // when the engine is made, naming it.
  RT_ASSIGN_OR_RETURN(std::unique_ptr<GpuContext> ctx, GpuContext::Create(ordinal));
  auto engine = std::make_unique<GpuEngine>(model, optimizer, max_batch, std::move(ctx));
  RT_RETURN_IF_ERROR(engine->Init());
  return std::unique_ptr<engine::Engine>(std::move(engine));
}

}  // namespace ringtrain::gpu
