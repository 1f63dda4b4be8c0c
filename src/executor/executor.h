// The one model executor: runs a model's op graph (ops/graph.h) on any backend
// (backends/backend.h), forward in the graph's order and backward in reverse, with
//   - need-input-gradient pruning: nodes before the first trainable weight run no
//     backward pass, and no node computes an input gradient nobody needs;
//   - gradient sums for outputs that feed several nodes (residual connections), added
//     on the backend in a fixed order;
//   - shared layers: a later call of a layer reads its weights and writes its gradients
//     to a buffer of its own, added into the layer's after the first call's backward pass;
//   - ready offsets: after each node's backward pass, on_ready(offset) says that the
//     gradient buffer from `offset` on is final, so its all-reduce can start while the
//     backward pass goes on;
//   - the fusion pass (executor/fusion.h), which asks the backend what it can fuse.
// The CPU engine and the CUDA engine both run this; neither walks the graph itself.
//
// Threading: one thread at a time. Forward and Backward allocate nothing after the first
// call with a given batch size.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <vector>

#include "backends/backend.h"
#include "common/status.h"
#include "ops/graph.h"

namespace ringtrain::executor {

struct PlanOptions {
  bool fuse = true;  // run the fusion pass
};

class Executor {
 public:
  // Plans `graph` on `backend` (not owned; it must outlive the executor): an op the
  // backend lacks is refused here, UNIMPLEMENTED with one line naming the layer, the op
  // and the device. Then the fusion pass, then one kernel per node.
  static StatusOr<std::unique_ptr<Executor>> Create(ops::Graph graph, backends::Backend* backend,
                                                    const PlanOptions& options);
  ~Executor();

  const ops::Graph& graph() const { return graph_; }
  backends::Backend& backend() const { return *backend_; }

  // Grows every kernel's buffers to `batch` examples and prepares that batch size;
  // returns the workspace bytes the largest kernel needs. The caller has waited for
  // queued work on the buffers.
  StatusOr<size_t> Prepare(int batch);

  // x: [batch, input shape] on the backend's device. Returns the output node's output,
  // valid until the next Forward. With `training`, x must stay valid until Backward.
  StatusOr<const float*> Forward(const backends::KernelArgs& args, const float* x, int batch, bool training);
  // dy: the gradient of the output for the last training Forward. Overwrites the
  // trainable gradients in args.grads; calls on_ready(offset) (may be null) as described
  // above, last with 0. FAILED_PRECONDITION without a training Forward since the last
  // evaluation one.
  Status Backward(const backends::KernelArgs& args, const float* dy, const std::function<void(size_t)>& on_ready);
  // After args.grads has been all-reduced (summed over num_replicas): every node with
  // reduced statistics updates its state from their sums (Kernel::ApplyReducedStats),
  // in graph order.
  Status ApplyReducedStats(const backends::KernelArgs& args, int num_replicas);

 private:
  Executor(ops::Graph graph, backends::Backend* backend) : graph_(std::move(graph)), backend_(backend) {}

  ops::Graph graph_;
  backends::Backend* backend_;
  std::vector<std::unique_ptr<backends::Kernel>> kernels_;
  // The node whose kernel took over the relu that produces node l's output (l itself,
  // or the relu node l passes through), -1 for none: a gradient summed for l is masked
  // in the same pass (Kernel::ReluGradientMask).
  std::vector<int> mask_owner_;
  std::vector<const float*> outputs_;  // per node, of the last Forward
  std::vector<const float*> dout_;     // per node: the gradient of its output
  std::vector<int> pending_;           // gradient contributions still to come per node
  std::vector<backends::Buffer> dsum_;  // sums for outputs that feed several nodes
  // Calls of shared layers (ops::Node::shares): each one's weight gradients, and per node
  // the later calls of its layer, whose gradients are added into its own after its
  // backward pass.
  std::vector<backends::Buffer> shared_grads_;
  std::vector<std::vector<size_t>> calls_;
  // The arguments node l's kernel runs with: a shared layer's call reads its layer's
  // weights and writes its gradients to shared_grads_[l].
  backends::KernelArgs ArgsFor(const backends::KernelArgs& args, size_t l) const;
  std::vector<const float*> in_, din_;
  std::vector<bool> need_;
  int batch_ = 0;  // of the last training Forward
  bool ready_for_backward_ = false;
};

}  // namespace ringtrain::executor
