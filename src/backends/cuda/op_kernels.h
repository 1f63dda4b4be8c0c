// The CUDA backend's kernels (backends/kernel.h), one per supported op: Conv2D through
// cuDNN, Dense through cuBLAS, MaxPool2D and Add through the CUDA kernels of
// backends/cuda/gpu_kernels.h, and views (reshape, flatten) that pass the device pointer
// through. Layouts are the model's: NHWC activations, parameters and gradients in the
// model's flat layout (HWIO conv kernels, [in, units] dense kernels) at the node's offsets.
//
// Every call only enqueues work on the context's compute stream (cuBLAS and cuDNN are
// bound to it); nothing here waits for the GPU. Growing a buffer (Reserve) frees the
// old one, so the caller waits for queued work first (GpuContext::SyncCompute).
//
// Threading: one thread at a time, with the kernel's GPU current.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "backends/cuda/gpu_context.h"
#include "backends/kernel.h"
#include "common/status.h"
#include "ops/graph.h"

namespace ringtrain::gpu {

// What a CUDA kernel reads of its node.
struct NodeDesc {
  std::string name;
  ops::Window window;
  int units = 0;
  bool relu = false;      // a relu output activation (else linear)
  bool use_bias = false;
  size_t kernel_offset = 0, bias_offset = 0;  // into the model's parameters (and gradients)
  bool kernel_trainable = true, bias_trainable = true;  // false: no gradient (a frozen layer)
  bool need_input_grad = false;
  std::vector<int> input_shape;

  static NodeDesc From(const ops::Node& node);
};

// The kernel for `node` on `gpu` (not owned; it must outlive the kernel); Reserve
// before use. The node's op is one the CUDA backend supports (CudaSupports).
StatusOr<std::unique_ptr<backends::Kernel>> NewCudaKernel(const ops::Node& node, const GpuContext* gpu);

// Max pooling (pool_kernel.cc); the other families' factories are in their own headers.
StatusOr<std::unique_ptr<backends::Kernel>> NewMaxPoolKernel(const NodeDesc& desc, const GpuContext* gpu);

}  // namespace ringtrain::gpu
