// The CUDA backend's kernels (backends/kernel.h) for the pooling, padding, rescaling and
// merge ops that need no cuDNN or cuBLAS: AvgPool2D, GlobalMaxPool2D, GlobalAvgPool2D,
// ZeroPadding2D, Rescaling, Concatenate, Multiply, and Add of any number of inputs. Each
// computes what the op's CPU layer computes, forward and backward, with the sums in the
// layer's order (backends/cuda/shape_math.h, the CUDA kernels of backends/cuda/shape_launch.h).
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

// Each factory takes a node of its op kind and `gpu` (not owned; it must outlive the
// kernel). INVALID_ARGUMENT when the node's shapes do not fit the op; UNIMPLEMENTED for
// what a kernel does not run (said at the factory).

// kAvgPool2D: any window, strides and padding (op.window; padding cells not counted).
// Dilation is not part of average pooling (ignored, as the CPU layer).
StatusOr<std::unique_ptr<backends::Kernel>> NewAvgPoolKernel(const ops::Node& node, const GpuContext* gpu);

// kGlobalMaxPool2D, kGlobalAvgPool2D: an [h, w, c] input, output [c] or [1, 1, c]
// (keepdims). The max's gradient goes to the first pixel of the maximum.
StatusOr<std::unique_ptr<backends::Kernel>> NewGlobalMaxPoolKernel(const ops::Node& node, const GpuContext* gpu);
StatusOr<std::unique_ptr<backends::Kernel>> NewGlobalAvgPoolKernel(const ops::Node& node, const GpuContext* gpu);

// kZeroPadding2D: top and left from op.window.pad_top / pad_left, bottom and right from
// the output shape.
StatusOr<std::unique_ptr<backends::Kernel>> NewZeroPaddingKernel(const ops::Node& node, const GpuContext* gpu);

// kRescaling: op.scale_values / op.offset_values, one per channel of the input's last
// axis, uploaded to the GPU once (on the first Reserve).
StatusOr<std::unique_ptr<backends::Kernel>> NewRescalingKernel(const ops::Node& node, const GpuContext* gpu);

// kConcatenate: any number of inputs of any rank, op.axis the per-example axis; the
// inputs agree on every other axis.
StatusOr<std::unique_ptr<backends::Kernel>> NewConcatenateKernel(const ops::Node& node, const GpuContext* gpu);

// kMultiply: any number of inputs of one shape; the product and each input's gradient
// in the CPU's left-to-right order.
StatusOr<std::unique_ptr<backends::Kernel>> NewMultiplyKernel(const ops::Node& node, const GpuContext* gpu);

// kAdd: any number of inputs of one shape, summed left to right as the CPU. Activation
// linear, or relu (op.activation, or taken over from a following relu through
// Kernel::AbsorbRelu, whose gradient mask is then this kernel's output); other
// activations are UNIMPLEMENTED. It does not take a producer's output over (DeferToAdd).
StatusOr<std::unique_ptr<backends::Kernel>> NewAddKernel(const ops::Node& node, const GpuContext* gpu);

// The factory above for node.op.kind; UNIMPLEMENTED for any other kind.
StatusOr<std::unique_ptr<backends::Kernel>> NewShapeKernel(const ops::Node& node, const GpuContext* gpu);

}  // namespace ringtrain::gpu
