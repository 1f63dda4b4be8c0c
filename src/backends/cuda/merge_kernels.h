// The CUDA backend's kernels (backends/kernel.h) for Subtract, Average, Maximum and
// Minimum: each computes what the CPU backend's merge kernel computes
// (backends/cpu/merge_kernels.cc), forward and backward, in its order
// (backends/cuda/merge_math.h; launches in backends/cuda/merge_launch.h). Add, Multiply and
// Concatenate are backends/cuda/shape_kernels.h's.
//
// Every call only enqueues work on the context's compute stream; nothing waits for the
// GPU. Reserve grows the kernel's buffers (the caller has waited for queued work).
//
// Threading: one thread at a time, with the context's GPU current.
#pragma once

#include <memory>

#include "backends/cuda/gpu_context.h"
#include "backends/kernel.h"
#include "common/status.h"
#include "ops/graph.h"

namespace ringtrain::gpu {

// node.op.kind kSubtract (two inputs), kAverage, kMaximum or kMinimum (two or more), the
// inputs and output of one shape; `gpu` not owned, it must outlive the kernel.
// INVALID_ARGUMENT when the node's shapes do not fit the op or the kind is another.
StatusOr<std::unique_ptr<backends::Kernel>> NewElementwiseMergeKernel(const ops::Node& node, const GpuContext* gpu);

}  // namespace ringtrain::gpu
