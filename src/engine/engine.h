// Where a worker's model runs: the device backend behind the trainer. Two engines
// implement it: the CPU one (engine/cpu_engine.h: nn::Model and nn::Optimizer on the
// AVX-512/OpenBLAS kernels) and the GPU one (engine/gpu_engine.h: cuDNN, cuBLAS and CUDA
// kernels, built when CMake finds CUDA). The trainer drives both through this
// interface, with the same job file.
//
// Ownership of the state: the engine works on its own copy of the weights and the
// optimizer state (on the GPU: device memory that stays there across steps). The host
// nn::Model and nn::Optimizer it was created with are the authoritative copy whenever
// the trainer is outside Fit; the trainer calls LoadFromHost() when it starts
// training and StoreToHost() wherever it reads the state (backup points, checkpoints,
// the end of Fit). For the CPU engine both are no-ops: it works on the host objects.
//
// One training step:
//   fill next_images()/next_labels(); SubmitBatch(b)        (the first batch)
//   StartStep(grad_scale)     forward, loss and backward are under way
//   fill and SubmitBatch the next batch                      (overlaps the step on a GPU)
//   FinishBackward(on_ready)  gradients final in the buffer from GradientBuffer()
//   all-reduce that buffer (the trainer's GradientSync)
//   ApplyUpdate()             the optimizer's step; iterations() + 1
//
// Threading: one thread drives an engine. Nothing blocks without a bound except the
// device work itself (a GPU kernel cannot be interrupted).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "collective/communicator.h"
#include "common/status.h"
#include "engine/objective.h"
#include "nn/model.h"
#include "nn/optimizers/optimizer.h"

namespace ringtrain::engine {

// A batch's statistics (one step's, or one evaluated batch's).
struct BatchStats {
  // The loss summed over the batch's examples, plus batch * the model's regularization
  // penalty (nn/model_regularization.h) on the weights the batch ran with: Keras'
  // reported loss includes the regularization losses.
  double loss_sum = 0;
  // The objective's metrics' sums for the batch (Objective::num_sums() of them).
  std::vector<double> metric_sums;
};

class Engine {
 public:
  virtual ~Engine() = default;  // never throws

  // One line for the log, e.g. "CPU (avx512 kernels, 2 threads)" or
  // "GPU 0: NVIDIA H200 (compute 9.0, 139.8 GiB), cuDNN 9.19.0, cuBLAS 13.0.0".
  virtual std::string Describe() const = 0;
  virtual bool on_gpu() const = 0;

  // Copies the host model's weights and the host optimizer's state (slots,
  // iterations) into the engine. Call after the host state changed (Restore,
  // SyncState) and before training. A step left unfinished by a failure is dropped
  // (here and in StoreToHost): its update never ran.
  virtual Status LoadFromHost() = 0;
  // Copies the engine's weights and optimizer state back to the host model and
  // optimizer (the optimizer's slots are allocated if they were empty).
  virtual Status StoreToHost() = 0;

  // Host memory for the next training batch: max_batch x example_size floats and
  // max_batch labels. May point elsewhere after SubmitBatch (double-buffered).
  virtual float* next_images() = 0;
  virtual int32_t* next_labels() = 0;
  // The next batch holds `batch` examples (1 <= batch <= max_batch): a GPU engine
  // starts copying it to the device at once, on a copy stream.
  virtual Status SubmitBatch(int batch) = 0;

  // The loss and metrics of every later step and evaluation (not owned; it must outlive
  // the engine or the next call). Until the first call an engine uses its own
  // Objective::Default(the model's outputs). An engine that cannot compute what it asks
  // for returns INVALID_ARGUMENT about Subject::kConfig naming the loss or metric (and
  // keeps the previous objective). Not between StartStep and FinishBackward.
  virtual Status SetObjective(const Objective* objective) = 0;

  // Starts forward, loss and backward on the last submitted batch. Each example's
  // loss gradient is scaled by grad_scale (1 / global batch); each regularized
  // trainable weight's penalty gradient by 1 / (the replicas of the GradientBuffer's
  // communicator), so that the all-reduced sum carries it once. FAILED_PRECONDITION
  // without a submitted batch.
  virtual Status StartStep(float grad_scale) = 0;
  // Finishes the step begun by StartStep: calls on_ready(offset), on this thread, as
  // soon as the gradient buffer's [offset, num_params) is final (offsets decrease;
  // the last call is with 0), and returns the batch's statistics.
  virtual StatusOr<BatchStats> FinishBackward(const std::function<void(size_t)>& on_ready) = 0;

  // Call before the step whose gradients it carries (the trainer calls it once per Fit).
  // Where this step's gradients are, for an all-reduce over `comm`: device memory when
  // the engine is on a GPU and comm takes device pointers (NCCL); host memory
  // otherwise (a GPU engine then copies the gradients into a pinned host buffer in
  // FinishBackward and back in ApplyUpdate). Stable until the next call.
  virtual float* GradientBuffer(const collective::Communicator& comm) = 0;
  // The optimizer's update with its current learning rate and the reduced gradients;
  // the host optimizer's iterations() goes up by one.
  virtual Status ApplyUpdate() = 0;

  // Inference on `batch` host examples (no gradients, no state change): the batch's
  // statistics under the objective.
  virtual StatusOr<BatchStats> Evaluate(const float* images, const int32_t* labels, int batch) = 0;
};

// The CPU engine over `model` and `optimizer` (not owned; they must outlive it).
std::unique_ptr<Engine> NewCpuEngine(nn::Model* model, nn::Optimizer* optimizer, int max_batch);

// Makes the engine for a model and optimizer (not owned; they must outlive it) taking
// batches of at most max_batch examples. engine/factory.h picks one for a device; a
// null factory means the CPU engine.
using EngineFactory =
    std::function<StatusOr<std::unique_ptr<Engine>>(nn::Model* model, nn::Optimizer* optimizer, int max_batch)>;

}  // namespace ringtrain::engine
