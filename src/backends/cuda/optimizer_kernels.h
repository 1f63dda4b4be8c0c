// The optimizer step and the weight regularization of a training step on the GPU, for
// the GPU engine: what nn::Optimizer::Apply and nn/model_regularization.h do on the host,
// on device memory, enqueued on the GPU's compute stream.
//
// GpuOptimizer runs every optimizer the host has (nn/optimizers/optimizer.h: sgd with
// momentum and nesterov, adam and adamw with amsgrad, rmsprop with momentum and centered,
// adagrad, nadam) with every option (weight_decay; clipnorm, global_clipnorm, clipvalue),
// in Optimizer::Apply's order: clip, decay, the rule. The per-element arithmetic is
// backends/cuda/optimizer_math.h: the CPU's bits for the same parameters, gradients and
// slots (clipping included: the norms are summed in double in kernels::SumSquares' pieces
// and order). Learning-rate schedules stay on the host: each Apply reads the host
// optimizer's learning_rate() and iterations().
//
// GpuRegularization is the model's weight regularization (kernel_/bias_regularizer: L1,
// L2, L1L2): its gradient added to the trainable weights' gradients with the CPU engine's
// scale, and its penalty for the loss, as a device double.
//
// Threading: one thread at a time (the engine's), with the GPU current. Every method only
// enqueues work on gpu->compute() and does not wait for it (Create's small table uploads
// are pageable copies, which the driver may stage before returning). Nothing allocates
// after Create. Errors are Status (CudaCheck); nothing throws.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "backends/cuda/device_buffer.h"
#include "backends/cuda/gpu_context.h"
#include "backends/cuda/optimizer_math.h"
#include "common/status.h"
#include "nn/model.h"
#include "nn/optimizers/optimizer.h"

namespace ringtrain::nn {
class Adam;
class Nadam;
}  // namespace ringtrain::nn

namespace ringtrain::gpu {

// A job's optimizer on the GPU: the update of the trainable prefix [0, num_trainable) of
// the device parameters from the (all-reduced) device gradients, with the optimizer's
// slots in device memory.
class GpuOptimizer {
 public:
  // `host` is the job's optimizer (it must outlive this object): its type,
  // hyperparameters and options are read here, its learning_rate() and iterations() at
  // every Apply. Clipnorm works per variable on host->variables() as they are here, as
  // Apply does (the buffer as one variable unless they tile [0, num_trainable)).
  // `params` are the model's weights (Model::param_infos()): the trainable ones must lie
  // in [0, num_trainable).
  // UNIMPLEMENTED naming what is missing for an optimizer this cannot run (an unknown
  // type; rmsprop, adagrad or nadam while their nn classes expose no hyperparameter
  // accessors); INVALID_ARGUMENT for bad arguments; a CUDA error's status when device
  // memory cannot be had.
  static StatusOr<std::unique_ptr<GpuOptimizer>> Create(nn::Optimizer* host, size_t num_trainable,
                                                        const std::vector<nn::ParamInfo>& params,
                                                        const GpuContext* gpu);
  GpuOptimizer(const GpuOptimizer&) = delete;
  GpuOptimizer& operator=(const GpuOptimizer&) = delete;

  // The slots, num_trainable floats each, in host->state() order (the engine copies them
  // to and from the host's). Create fills them with their initial values (ResetSlots).
  std::vector<float*> slots();
  // Fills every slot with its Keras initial value: 0, adagrad's accumulator
  // initial_accumulator_value (what the host optimizer's Build gives a fresh slot).
  Status ResetSlots();

  // One update of params[0, num_trainable) from grads[0, num_trainable) (device memory;
  // grads is read only): clip, weight decay, the rule, for step host->iterations() + 1
  // with host->learning_rate(). host->iterations() is not changed here (the engine counts
  // the step, as Optimizer::Apply does).
  Status Apply(float* params, const float* grads);

  // "adam (amsgrad), clipnorm 1, weight_decay 0.004": for logs.
  std::string Describe() const;

 private:
  GpuOptimizer() = default;
  StatusOr<om::StepArgs> NextStep();

  nn::Optimizer* host_ = nullptr;
  const GpuContext* gpu_ = nullptr;
  size_t n_ = 0;
  om::Rule rule_ = om::Rule::kSgd;
  // The hyperparameters the rule needs (those of the host optimizer's type).
  double momentum_ = 0, epsilon_ = 0, rho_ = 0, beta_1_ = 0, beta_2_ = 0, initial_ = 0;
  bool centered_ = false;
  nn::Adam* adam_ = nullptr;    // adam, adamw: its NextStepScalars
  nn::Nadam* nadam_ = nullptr;  // nadam: its UProduct

  std::vector<std::string> slot_names_;
  std::vector<float> slot_init_;
  std::vector<DeviceBuffer<float>> slots_;

  // The pieces of the variables (optimizer_math.h), on the host and the device.
  std::vector<om::Chunk> host_chunks_;
  std::vector<int64_t> host_var_first_;
  DeviceBuffer<om::Chunk> chunks_;
  DeviceBuffer<int64_t> var_first_;
  DeviceBuffer<double> partial_;     // clipnorm, global_clipnorm: per piece
  DeviceBuffer<float> clip_factor_;  // clipnorm: per variable divisor; global_clipnorm: the scale
};

// The model's weight regularization on the GPU.
class GpuRegularization {
 public:
  // From the model's weights (Model::param_infos()); active() is false when none has an
  // active regularizer, and then every method does nothing.
  static StatusOr<std::unique_ptr<GpuRegularization>> Create(const std::vector<nn::ParamInfo>& params,
                                                             const GpuContext* gpu);
  GpuRegularization(const GpuRegularization&) = delete;
  GpuRegularization& operator=(const GpuRegularization&) = delete;

  bool active() const { return !host_penalty_segments_.empty(); }

  // grads[i] += scale * dPenalty/dw[i] for every trainable regularized weight's elements
  // i within [begin, end), as nn::AddRegularizationGradients (the CPU engine passes
  // scale = 1 / number of replicas, before the gradients are all-reduced). params and
  // grads are the model's device buffers (offsets as in param_infos()).
  Status AddGradients(const float* params, float* grads, size_t begin, size_t end, float scale);

  // *penalty (one device double) = nn::RegularizationPenalty of the device params: every
  // regularized weight, frozen ones included, in param_infos() order.
  Status Penalty(const float* params, double* penalty);
  // *loss_sum (one device double) += batch * the penalty: the CPU engine's loss sum.
  Status AddPenaltyToLoss(const float* params, int batch, double* loss_sum);

 private:
  GpuRegularization() = default;
  Status Run(const float* params, double* penalty, double* loss_sum, double batch);

  const GpuContext* gpu_ = nullptr;
  // The trainable regularized weights' pieces (gradient) and every regularized weight's (penalty).
  std::vector<om::Chunk> host_grad_chunks_, host_penalty_chunks_;
  std::vector<om::RegSegment> host_grad_segments_, host_penalty_segments_;
  DeviceBuffer<om::Chunk> grad_chunks_, penalty_chunks_;
  DeviceBuffer<om::RegSegment> grad_segments_, penalty_segments_;
  DeviceBuffer<double> abs_partial_, square_partial_;
};

}  // namespace ringtrain::gpu
