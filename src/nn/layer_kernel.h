// The CPU kernel of each node of a model: the CPU backend's own (backends/cpu), except
// for the ops whose CPU passes are still their layers' (Dropout and the augmentation
// layers: Layer::Forward/Backward), which LayerKernel wraps as a kernel
// (backends/kernel.h) so that the one executor (executor/executor.h) runs them too.
#pragma once

#include <memory>
#include <vector>

#include "backends/backend.h"
#include "backends/kernel.h"
#include "nn/layer.h"
#include "ops/graph.h"

namespace ringtrain::nn {

// The ops the CPU backend makes no kernel for yet: their layers' CPU passes run instead.
inline bool RunsAsLayerKernel(ops::OpKind kind) {
  switch (kind) {
    case ops::OpKind::kDropout:
    case ops::OpKind::kRandomFlip:
    case ops::OpKind::kRandomCrop:
    case ops::OpKind::kRandomRotation:
    case ops::OpKind::kRandomTranslation:
      return true;
    default:
      return false;
  }
}

// A layer's CPU passes as a CPU kernel: one input, no weights, no fusion. The layer reads
// its step from its own context (Layer::set_context); KernelArgs are not used.
class LayerKernel final : public backends::Kernel {
 public:
  explicit LayerKernel(Layer* layer) : layer_(layer) {}

  StatusOr<const float*> Forward(const backends::KernelArgs&, const std::vector<const float*>& in, int batch,
                                 bool training) override {
    return layer_->Forward(in[0], batch, training);
  }
  Status Backward(const backends::KernelArgs&, const float* dout, const std::vector<bool>& need_din,
                  std::vector<const float*>* din) override {
    (*din)[0] = layer_->Backward(dout, need_din[0]);
    return Status::Ok();
  }

 private:
  Layer* layer_;
};

// The CPU kernel of `node`, the op of `layer` (not owned; it must outlive the kernel):
// the CPU backend's, or a LayerKernel where RunsAsLayerKernel.
inline StatusOr<std::unique_ptr<backends::Kernel>> NewCpuKernel(backends::Backend& cpu, const ops::Node& node,
                                                               Layer* layer) {
  if (RunsAsLayerKernel(node.op.kind)) return std::unique_ptr<backends::Kernel>(new LayerKernel(layer));
  return cpu.NewKernel(node);
}

}  // namespace ringtrain::nn
