// A layer's CPU passes as a CPU backend kernel (backends/kernel.h), so that the one
// executor (executor/executor.h) runs the model on the CPU. The layer's weights are
// bound to the model's host buffers (Layer::BindParams); the kernel ignores
// KernelArgs' pointers, which are those same buffers.
#pragma once

#include <memory>
#include <vector>

#include "backends/kernel.h"
#include "nn/layer.h"

namespace ringtrain::nn {

class LayerKernel final : public backends::Kernel {
 public:
  explicit LayerKernel(Layer* layer) : layer_(layer) {}

  StatusOr<const float*> Forward(const backends::KernelArgs&, const std::vector<const float*>& in, int batch,
                                 bool training) override {
    if (in.size() == 1) return layer_->Forward(in[0], batch, training);
    return layer_->ForwardInputs(in, batch, training);
  }
  Status Backward(const backends::KernelArgs&, const float* dout, const std::vector<bool>& need_din,
                  std::vector<const float*>* din) override {
    if (need_din.size() == 1) {
      (*din)[0] = layer_->Backward(dout, need_din[0]);
    } else {
      layer_->BackwardInputs(dout, need_din, din);
    }
    return Status::Ok();
  }

  Status ApplyReducedStats(const backends::KernelArgs&, const float* sums, int num_replicas) override {
    layer_->ApplyReducedStats(sums, num_replicas);
    return Status::Ok();
  }

  bool AbsorbRelu() override { return layer_->AbsorbRelu(); }
  void PassThrough() override { layer_->PassThrough(); }
  const float* ReluGradientMask() const override { return layer_->ReluGradientMask(); }
  void GradientMasked() override { layer_->GradientMasked(); }
  bool DeferToAdd() override { return layer_->DeferToAdd(); }
  // The executor pairs kernels of one backend: on the CPU, every kernel is a LayerKernel.
  void TakeDeferredInput(size_t k, backends::Kernel* producer) override {
    layer_->TakeDeferredInput(k, static_cast<LayerKernel*>(producer)->layer_);
  }

 private:
  Layer* layer_;
};

}  // namespace ringtrain::nn
