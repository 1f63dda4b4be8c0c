// One GPU layer per nn::LayerDesc: conv2d through cuDNN, dense through cuBLAS, max
// pooling through the CUDA kernels of gpu/gpu_kernels.h, and views (reshape, flatten)
// that pass the device pointer through. Layouts are the model's: NHWC activations,
// parameters and gradients in the model's flat layout (HWIO conv kernels, [in, units]
// dense kernels) at the offsets the LayerDesc gives.
//
// Every call only enqueues work on the context's compute stream (cuBLAS and cuDNN are
// bound to it); nothing here waits for the GPU.
//
// Memory: a layer owns its output, input-gradient and scratch buffers, sized by
// Reserve for a number of examples. Growing a buffer frees the old one, so the caller
// must have waited for queued work that uses it (GpuContext::SyncCompute) before a
// Reserve that grows. A returned pointer stays valid until the layer's next call.
//
// Threading: one thread at a time, with the layer's GPU current.
#pragma once

#include <cstddef>
#include <memory>

#include "common/status.h"
#include "gpu/gpu_context.h"
#include "nn/layer_desc.h"

namespace ringtrain::gpu {

// What a layer call works on besides its own buffers.
struct LayerArgs {
  const float* params = nullptr;  // device: the model's parameters
  float* grads = nullptr;         // device: the model's gradients (same layout)
  void* workspace = nullptr;      // device scratch for cuDNN
  size_t workspace_bytes = 0;
};

class GpuLayer {
 public:
  virtual ~GpuLayer() = default;
  GpuLayer() = default;
  GpuLayer(const GpuLayer&) = delete;
  GpuLayer& operator=(const GpuLayer&) = delete;

  // Grows the buffers to `batch` examples (never shrinks).
  virtual Status Reserve(int batch) = 0;
  // Chooses the algorithms for `batch` examples (once per batch size) and returns the
  // workspace bytes they need; Forward/Backward with that batch need at least as much.
  virtual StatusOr<size_t> PrepareBatch(int batch) { return size_t{0}; }
  // y = the layer on x [batch, input...] (device). `training` keeps x (which must stay
  // valid) for Backward. batch <= the reserved batch, and prepared.
  virtual StatusOr<const float*> Forward(const LayerArgs& args, const float* x, int batch, bool training) = 0;
  // For the last training Forward: overwrites this layer's parameter gradients in
  // args.grads and returns dL/dx when need_din (else null).
  virtual StatusOr<const float*> Backward(const LayerArgs& args, const float* dy, bool need_din) = 0;
};

// The layer for `desc` on `gpu` (not owned; must outlive the layer). Reserve before use.
StatusOr<std::unique_ptr<GpuLayer>> NewGpuLayer(const nn::LayerDesc& desc, const GpuContext* gpu);

// Per-kind factories (gpu_conv.cc, gpu_dense.cc, gpu_pool.cc).
StatusOr<std::unique_ptr<GpuLayer>> NewGpuConv(const nn::LayerDesc& desc, const GpuContext* gpu);
StatusOr<std::unique_ptr<GpuLayer>> NewGpuDense(const nn::LayerDesc& desc, const GpuContext* gpu);
StatusOr<std::unique_ptr<GpuLayer>> NewGpuMaxPool(const nn::LayerDesc& desc, const GpuContext* gpu);
std::unique_ptr<GpuLayer> NewGpuView();

}  // namespace ringtrain::gpu
