// The CUDA backend's kernel (backends/kernel.h) for Normalization: what the CPU kernel
// computes (backends/cpu/normalization_kernel.cc), forward and backward, with the
// arithmetic of backends/cuda/normalization_math.h. Every call only enqueues work on the
// context's compute stream; Reserve uploads the op's values and index table once and
// grows the buffers (the caller has waited for queued work).
//
// Threading: one thread at a time, with the context's GPU current.
#pragma once

#include <memory>

#include "backends/cuda/gpu_context.h"
#include "backends/kernel.h"
#include "common/status.h"
#include "ops/graph.h"

namespace ringtrain::gpu {

// node.op.kind kNormalization, one input, the output of its shape; `gpu` not owned, it
// must outlive the kernel. INVALID_ARGUMENT when the op's values or weights do not fit.
StatusOr<std::unique_ptr<backends::Kernel>> NewNormalizationKernel(const ops::Node& node, const GpuContext* gpu);

}  // namespace ringtrain::gpu
