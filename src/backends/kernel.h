// One node's op on one backend (backends/backend.h): the executor calls Forward in the
// graph's order and Backward in reverse. Pointers are the backend's device memory.
//
// Memory: a kernel owns its output, input-gradient and scratch buffers and grows them
// to the largest batch it has run (Reserve); a pointer it returns stays valid until its
// next Forward or Backward. Kernels that only relabel the shape return their input.
//
// Threading: one thread at a time (with the backend's device current).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "common/status.h"

namespace ringtrain::backends {

// What a kernel may need to know about the step it runs in: Dropout and the
// augmentation layers draw their random numbers from (seed, step, replica), so a run
// gives the same bits whatever the thread count, and a resumed run the same as one
// that never stopped.
struct StepContext {
  uint64_t seed = 0;     // the job's seed
  int64_t step = 0;      // updates applied before this one (the optimizer's iterations)
  int replica = 0;       // this worker's rank
  int num_replicas = 1;  // workers in the all-reduce
  // Sums n floats element-wise across the replicas, in place; every replica calls it with the same n in
  // the same order. Null outside multi-worker training (one replica: nothing to sum). Returns false if the
  // collective failed; the layer then leaves its outputs as they are and the trainer abandons the step.
  // Synchronized BatchNormalization calls it inside a training Forward and Backward, with
  // host memory.
  std::function<bool(float* data, size_t n)> all_reduce_sum;
};

// What a kernel call works on besides its own buffers.
struct KernelArgs {
  // The model's weights, in the model's flat layout. The passes only read them;
  // ApplyReducedStats writes the moving statistics (non-trainable weights) in place.
  float* params = nullptr;
  // Their gradients (the trainable prefix, same offsets), then the nodes' reduced
  // statistics (ops::Node::first_stat): the buffer the all-reduce sums.
  float* grads = nullptr;
  void* workspace = nullptr;      // shared scratch (cuDNN's workspace)
  size_t workspace_bytes = 0;
  const StepContext* step = nullptr;  // the step a training Forward runs in
};

class Kernel {
 public:
  Kernel() = default;
  virtual ~Kernel() = default;
  Kernel(const Kernel&) = delete;
  Kernel& operator=(const Kernel&) = delete;

  // Grows the kernel's buffers to `batch` examples (never shrinks). The caller has
  // waited for queued work that uses them.
  virtual Status Reserve(int batch) { return Status::Ok(); }
  // Prepares `batch` examples (algorithm choice, once per batch size) and returns the
  // workspace bytes Forward and Backward then need.
  virtual StatusOr<size_t> PrepareBatch(int batch) { return size_t{0}; }

  // in[k]: [batch, input k's shape]. Returns the output [batch, output shape]. With
  // `training`, the inputs stay valid until Backward and the kernel keeps what it needs.
  virtual StatusOr<const float*> Forward(const KernelArgs& args, const std::vector<const float*>& in, int batch,
                                         bool training) = 0;
  // For the last training Forward: overwrites the node's trainable weights' gradients in
  // args.grads, and writes (*din)[k], the gradient of input k, where need_din[k] (else null).
  virtual Status Backward(const KernelArgs& args, const float* dout, const std::vector<bool>& need_din,
                          std::vector<const float*>* din) = 0;

  // After the all-reduce: `sums` (args.grads + the node's first_stat) holds the
  // replicas' sums of the statistics the training Forward wrote there; the kernel updates
  // its state from them (BatchNorm's moving mean and variance).
  virtual Status ApplyReducedStats(const KernelArgs& args, const float* sums, int num_replicas) {
    return Status::Ok();
  }

  // The fusions a backend declares (Backend::CanFuse); its kernels implement them.
  // kReluIntoProducer: the producer takes the relu over (false: it declines) and the relu
  // node passes through. ReluGradientMask is then the producer's output, and
  // GradientMasked tells it that its next output gradient arrives already masked.
  virtual bool AbsorbRelu() { return false; }
  virtual void PassThrough() {}
  virtual const float* ReluGradientMask() const { return nullptr; }
  virtual void GradientMasked() {}
  // kProducerIntoAdd: the producer leaves its output to the Add (false: it declines);
  // the Add learns which of its inputs that is and from which kernel.
  virtual bool DeferToAdd() { return false; }
  virtual void TakeDeferredInput(size_t k, Kernel* producer) {}
};

}  // namespace ringtrain::backends
