// The CUDA backend's kernels (backends/kernel.h) for the vision ops that need no cuDNN:
// Cropping2D, UpSampling2D, Resizing and CenterCrop (one resampling kernel: the op's box
// of the input copied, or resized nearest or bilinear as tf.image.resize), and Permute.
// Each computes what the op's CPU kernel computes (backends/cpu/resample_kernels.cc,
// permute_kernel.cc), forward and backward, with the same bits (backends/cuda/vision_math.h).
//
// Every call only enqueues work on the context's compute stream; Reserve grows the
// kernel's buffers (the caller has waited for queued work). Threading: one thread at a
// time, with the context's GPU current.
#pragma once

#include <memory>

#include "backends/cuda/gpu_context.h"
#include "backends/kernel.h"
#include "common/status.h"
#include "ops/graph.h"

namespace ringtrain::gpu {

// kCropping2D, kUpSampling2D, kResizing, kCenterCrop: INVALID_ARGUMENT when the node's
// box or shapes do not fit. `gpu` is not owned; it must outlive the kernel.
StatusOr<std::unique_ptr<backends::Kernel>> NewResampleKernel(const ops::Node& node, const GpuContext* gpu);
// kPermute of any rank up to 8.
StatusOr<std::unique_ptr<backends::Kernel>> NewPermuteKernel(const ops::Node& node, const GpuContext* gpu);
// kReduce over up to 8 axes.
StatusOr<std::unique_ptr<backends::Kernel>> NewReduceKernel(const ops::Node& node, const GpuContext* gpu);

}  // namespace ringtrain::gpu
