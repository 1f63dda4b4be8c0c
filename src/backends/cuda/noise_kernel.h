// The CUDA backend's kernels (backends/kernel.h) for SpatialDropout2D and GaussianNoise:
// what the CPU kernels compute (backends/cpu/noise_kernels.cc), with the same draws
// (backends/cuda/noise_math.h). Inference (and rate 0, stddev 0) passes the input
// pointer through, and the output gradient likewise; GaussianNoise's gradient is always
// the identity. Every call only enqueues work on the context's compute stream.
//
// Threading: one thread at a time, with the context's GPU current.
#pragma once

#include <memory>

#include "backends/cuda/gpu_context.h"
#include "backends/kernel.h"
#include "common/status.h"
#include "ops/graph.h"

namespace ringtrain::gpu {

// node.op.kind kSpatialDropout2D (a [height, width, channels] input) or kGaussianNoise,
// the output of the input's shape; `gpu` not owned, it must outlive the kernel.
// INVALID_ARGUMENT when the node does not fit.
StatusOr<std::unique_ptr<backends::Kernel>> NewNoiseKernel(const ops::Node& node, const GpuContext* gpu);

}  // namespace ringtrain::gpu
