#include "executor/fusion.h"

namespace ringtrain::executor::internal {

bool IsPlainRelu(const ops::Node& node) {
  return node.op.kind == ops::OpKind::kActivation && node.op.activation == ops::Activation::kRelu &&
         !node.op.relu.generic;
}

std::vector<int> FuseForBackend(const ops::Graph& graph, const backends::Backend& backend,
                                const std::vector<std::unique_ptr<backends::Kernel>>& kernels) {
  const size_t n = graph.nodes.size();
  std::vector<int> mask_owner(n, -1);
  // A plain relu whose input feeds nothing else runs inside the node before it, when the
  // backend fuses that and the kernel takes it.
  for (size_t l = 0; l < n; ++l) {
    const ops::Node& node = graph.nodes[l];
    if (!IsPlainRelu(node) || node.inputs.size() != 1) continue;
    const int k = node.inputs[0];
    if (k == ops::kModelInput) continue;
    const ops::Node& producer = graph.nodes[static_cast<size_t>(k)];
    if (producer.consumers != 1 || !backend.CanFuse(backends::Fusion::kReluIntoProducer, producer.op)) continue;
    if (kernels[static_cast<size_t>(k)]->AbsorbRelu()) {
      kernels[l]->PassThrough();
      mask_owner[l] = k;
    }
  }
  // A node whose output feeds nothing but an Add of two inputs may be computed inside
  // the Add's pass.
  for (size_t l = 0; l < n; ++l) {
    const ops::Node& node = graph.nodes[l];
    const std::vector<int>& from = node.inputs;
    if (node.op.kind != ops::OpKind::kAdd || from.size() != 2 || from[0] == from[1]) continue;
    for (size_t k = 0; k < 2; ++k) {
      const int src = from[k];
      if (src == ops::kModelInput) continue;
      const ops::Node& producer = graph.nodes[static_cast<size_t>(src)];
      if (producer.consumers != 1 || !backend.CanFuse(backends::Fusion::kProducerIntoAdd, producer.op)) continue;
      if (kernels[static_cast<size_t>(src)]->DeferToAdd()) {
        kernels[l]->TakeDeferredInput(k, kernels[static_cast<size_t>(src)].get());
        break;
      }
    }
  }
  return mask_owner;
}

}  // namespace ringtrain::executor::internal
