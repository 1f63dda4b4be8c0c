// The CUDA backend's kernel (backends/kernel.h) for RandomZoom: what the CPU kernel
// computes (backends/cpu/random_zoom_kernel.cc). Each example's transform is drawn on the
// host (backends/cuda/zoom_math.h) and the images sampled by random_launch.h's
// AffineImages (and its adjoint), as RandomTranslation's kernel does. Inference passes
// the input pointer through. Every call only enqueues work on the compute stream.
//
// Threading: one thread at a time, with the context's GPU current.
#pragma once

#include <memory>

#include "backends/cuda/gpu_context.h"
#include "backends/kernel.h"
#include "common/status.h"
#include "ops/graph.h"

namespace ringtrain::gpu {

// node.op.kind kRandomZoom on a [height, width, channels] input, the output of its shape;
// `gpu` not owned, it must outlive the kernel.
StatusOr<std::unique_ptr<backends::Kernel>> NewRandomZoomKernel(const ops::Node& node, const GpuContext* gpu);

}  // namespace ringtrain::gpu
