// The CUDA backend's kernel (backends/kernel.h) for RandomBrightness and RandomContrast:
// what the CPU kernel computes (backends/cpu/image_adjust_kernels.cc), with the same draws
// and arithmetic (backends/cuda/image_adjust_math.h). Inference passes the input pointer
// (and the output gradient) through. Every call only enqueues work on the context's
// compute stream; Reserve grows the buffers (the caller has waited for queued work).
//
// Threading: one thread at a time, with the context's GPU current.
#pragma once

#include <memory>

#include "backends/cuda/gpu_context.h"
#include "backends/kernel.h"
#include "common/status.h"
#include "ops/graph.h"

namespace ringtrain::gpu {

// node.op.kind kRandomBrightness or kRandomContrast on a [height, width, channels] input,
// the output of its shape; `gpu` not owned, it must outlive the kernel.
StatusOr<std::unique_ptr<backends::Kernel>> NewImageAdjustKernel(const ops::Node& node, const GpuContext* gpu);

}  // namespace ringtrain::gpu
