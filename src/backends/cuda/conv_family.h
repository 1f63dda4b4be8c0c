// The CUDA kernels (backends/kernel.h) of the convolution family and Dense, made from
// the node itself: each reads its op's arguments, its weights' offsets and trainable
// flags (ops::Node::params, in the layer's weight order) and whether its input gradient
// is wanted. They compute what the CPU layers compute (nn/layers/conv2d.cc,
// depthwise_conv2d.cc, separable_conv2d.cc, dense.cc), forward and backward:
//
//   Conv2D (conv_kernel.cc): cuDNN; any kernel size, strides, 'valid' or 'same'
//     padding, dilation, groups (dividing both the input channels and the filters), bias
//     or none, any output activation.
//   DepthwiseConv2D (depthwise_kernel.cc): direct CUDA kernels (depthwise_conv.h); any
//     kernel size, strides, padding, dilation, depth_multiplier, bias or none, any output
//     activation.
//   SeparableConv2D (separable_kernel.cc): the depthwise kernels into c * multiplier
//     channels (no bias, linear), then the pointwise 1x1 convolution as one cuBLAS
//     product over the pixels, with the bias and any output activation.
//   Dense (dense_kernel.cc): cuBLAS, a flat input, bias or none, any output activation.
//
// The output activation: relu and linear run fused with the bias; any other runs
// after it on the kept pre-activation (backends/cuda/activation_kernels.h), its
// gradient from the pre-activation and the output, and the bias gradient is the sum of
// the gradient before the activation, as on the CPU (output_activation.h).
//
// Frozen weights (ParamRef::trainable false) get no gradient; trainable ones have theirs
// overwritten at args.grads + their offset. Every call only enqueues work on the
// context's compute stream. Errors: INVALID_ARGUMENT for a node these factories do not
// make (another op kind, an empty shape, groups that do not divide); cuDNN's refusals
// at Init/PrepareBatch as its Status.
#pragma once

#include <memory>

#include "backends/cuda/gpu_context.h"
#include "backends/kernel.h"
#include "common/status.h"
#include "ops/graph.h"

namespace ringtrain::gpu {

// Every Conv2D (groups and dilation included).
StatusOr<std::unique_ptr<backends::Kernel>> NewConv2DKernel(const ops::Node& node, const GpuContext* gpu);
StatusOr<std::unique_ptr<backends::Kernel>> NewDepthwiseConv2DKernel(const ops::Node& node, const GpuContext* gpu);
StatusOr<std::unique_ptr<backends::Kernel>> NewSeparableConv2DKernel(const ops::Node& node, const GpuContext* gpu);
// Dense with any output activation.
StatusOr<std::unique_ptr<backends::Kernel>> NewDenseKernelForNode(const ops::Node& node, const GpuContext* gpu);

}  // namespace ringtrain::gpu
