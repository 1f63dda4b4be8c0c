#include "executor/executor.h"

#include <algorithm>

#include "executor/fusion.h"

namespace ringtrain::executor {

StatusOr<std::unique_ptr<Executor>> Executor::Create(ops::Graph graph, backends::Backend* backend,
                                                     const PlanOptions& options) {
  if (graph.nodes.empty()) return InvalidArgumentError("a model graph without nodes");
  for (const ops::Node& node : graph.nodes) {
    const Status s = backend->Supports(node.op);
    if (!s.ok()) {
      return UnimplementedError(node.Label() + ": op " + ops::Describe(node.op) + " does not run on device \"" +
                                backends::DeviceName(backend->device()) + "\" (" + s.message() +
                                "); set the job's \"device\" to \"cpu\" (docs/reference/devices.md)");
    }
  }
  std::unique_ptr<Executor> e(new Executor(std::move(graph), backend));
  const size_t n = e->graph_.nodes.size();
  for (size_t i = 0; i < n; ++i) {
    const ops::Node& node = e->graph_.nodes[i];
    auto kernel = backend->NewKernel(node);
    if (!kernel.ok()) return kernel.status();
    e->kernels_.push_back(std::move(kernel).value());
  }
  e->mask_owner_ = options.fuse ? internal::FuseForBackend(e->graph_, *backend, e->kernels_) : std::vector<int>(n, -1);
  e->outputs_.assign(n, nullptr);
  e->dout_.assign(n, nullptr);
  e->pending_.assign(n, 0);
  e->dsum_.resize(n);
  e->shared_grads_.resize(n);
  e->calls_.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const ops::Node& node = e->graph_.nodes[i];
    if (node.shares < 0) continue;
    if (static_cast<size_t>(node.shares) >= i || e->graph_.nodes[static_cast<size_t>(node.shares)].shares >= 0) {
      return InternalError(node.Label() + " shares the weights of a node that is not an earlier first call");
    }
    size_t floats = 0;
    for (const ops::ParamRef& p : node.params) floats += p.trainable ? p.count : 0;
    if (floats > 0) {
      RT_ASSIGN_OR_RETURN(e->shared_grads_[i],
                          backend->Allocate(floats * sizeof(float), "the weight gradients of " + node.Label()));
    }
    e->calls_[static_cast<size_t>(node.shares)].push_back(i);
  }
  return e;
}

backends::KernelArgs Executor::ArgsFor(const backends::KernelArgs& args, size_t l) const {
  const ops::Node& node = graph_.nodes[l];
  if (node.shares < 0) return args;
  backends::KernelArgs a = args;
  a.params = args.params + node.shared_params;
  a.grads = shared_grads_[l].floats();
  return a;
}

Executor::~Executor() = default;

StatusOr<size_t> Executor::Prepare(int batch) {
  size_t workspace = 0;
  for (auto& kernel : kernels_) {
    RT_RETURN_IF_ERROR(kernel->Reserve(batch));
    RT_ASSIGN_OR_RETURN(size_t bytes, kernel->PrepareBatch(batch));
    workspace = std::max(workspace, bytes);
  }
  return workspace;
}

StatusOr<const float*> Executor::Forward(const backends::KernelArgs& args, const float* x, int batch, bool training) {
  ready_for_backward_ = false;
  const std::vector<ops::Node>& nodes = graph_.nodes;
  for (size_t l = 0; l < nodes.size(); ++l) {
    in_.clear();
    for (int k : nodes[l].inputs) in_.push_back(k == ops::kModelInput ? x : outputs_[static_cast<size_t>(k)]);
    RT_ASSIGN_OR_RETURN(outputs_[l], kernels_[l]->Forward(ArgsFor(args, l), in_, batch, training));
  }
  if (training) batch_ = batch;
  ready_for_backward_ = training;
  return outputs_.back();
}

Status Executor::Backward(const backends::KernelArgs& args, const float* dy,
                          const std::function<void(size_t)>& on_ready) {
  if (!ready_for_backward_) return FailedPreconditionError("Backward without a preceding training Forward");
  const std::vector<ops::Node>& nodes = graph_.nodes;
  const size_t nl = nodes.size();
  for (size_t l = 0; l < nl; ++l) pending_[l] = nodes[l].consumers;
  dout_[nl - 1] = dy;
  for (size_t i = nl; i-- > 0;) {
    const ops::Node& node = nodes[i];
    if (!node.run_backward) continue;  // no trainable weight at or before this node
    const std::vector<int>& from = node.inputs;
    din_.assign(from.size(), nullptr);
    RT_RETURN_IF_ERROR(kernels_[i]->Backward(ArgsFor(args, i), dout_[i], node.need_input_grad, &din_));
    // The later calls of this node's layer ran before it (back to front): their weight
    // gradients join its own, in graph order.
    for (size_t call : calls_[i]) {
      if (!nodes[call].run_backward || shared_grads_[call].bytes() == 0) continue;
      float* own = args.grads + node.params.at(0).offset;
      RT_RETURN_IF_ERROR(backend_->Accumulate(own, shared_grads_[call].floats(), shared_grads_[call].bytes() / sizeof(float)));
    }
    // Hand each input gradient to the node that produced that input. An output that
    // feeds several nodes gets the sum of their gradients, added in this fixed (reverse
    // graph) order.
    for (size_t k = 0; k < from.size(); ++k) {
      if (!node.need_input_grad[k]) continue;
      const size_t src = static_cast<size_t>(from[k]);
      // The first contribution is kept by pointer (it stays valid: its node has run; the
      // only one for an output that feeds one node), the second is added to it into
      // dsum, later ones into dsum: first + second + ...
      const int seen = nodes[src].consumers - pending_[src];
      if (seen == 0) {
        dout_[src] = din_[k];
      } else {
        const size_t n = static_cast<size_t>(batch_) * static_cast<size_t>(nodes[src].output_size());
        backends::Buffer& sum = dsum_[src];
        if (sum.bytes() < n * sizeof(float)) {
          RT_ASSIGN_OR_RETURN(sum, backend_->Allocate(n * sizeof(float), "the gradient sum of " + nodes[src].Label()));
        }
        float* acc = sum.floats();
        const int owner = mask_owner_[src];
        if (seen == 1 && pending_[src] == 1 && owner >= 0) {
          // The last of two contributions, bound for a fused relu: summed and masked in
          // one pass (the bits of the sum, then the mask), and the owner not masking again.
          backends::Kernel& fused = *kernels_[static_cast<size_t>(owner)];
          RT_RETURN_IF_ERROR(backend_->AddArrays(dout_[src], din_[k], fused.ReluGradientMask(), n, acc));
          fused.GradientMasked();
        } else if (seen == 1) {
          RT_RETURN_IF_ERROR(backend_->AddArrays(dout_[src], din_[k], nullptr, n, acc));
        } else {
          RT_RETURN_IF_ERROR(backend_->Accumulate(acc, din_[k], n));
        }
        dout_[src] = acc;
      }
      --pending_[src];
    }
    // Nodes run back to front, so every gradient from this node's first one on is final.
    const size_t end = i + 1 < nl ? nodes[i + 1].first_trainable : graph_.num_trainable;
    if (on_ready && end > node.first_trainable) on_ready(node.first_trainable);
  }
  if (on_ready) on_ready(0);
  return Status::Ok();
}

Status Executor::ApplyReducedStats(const backends::KernelArgs& args, int num_replicas) {
  for (size_t l = 0; l < graph_.nodes.size(); ++l) {
    const ops::Node& node = graph_.nodes[l];
    if (node.num_stats == 0) continue;
    RT_RETURN_IF_ERROR(kernels_[l]->ApplyReducedStats(args, args.grads + node.first_stat, num_replicas));
  }
  return Status::Ok();
}

}  // namespace ringtrain::executor
