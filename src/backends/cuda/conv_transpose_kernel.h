// The CUDA kernel (backends/kernel.h) of Conv2DTranspose, through cuDNN. op.window is
// the Conv2D from the layer's output [Ho, Wo, filters] back to its input [H, W, C], with
// the kernel [kh, kw, filters, C] as that convolution's HWIO filter
// (nn/layers/conv2d_transpose.h). So
//   forward   cudnnConvolutionBackwardData of x, + bias, then the output activation
//             (backends/cuda/output_activation.h);
//   backward  the gradient before the activation d; the kernel's gradient is
//             cudnnConvolutionBackwardFilter with d as the convolution's input and x as
//             its output gradient; the input's gradient cudnnConvolutionForward of d.
// FP32 (FMA math, no TF32), deterministic algorithms chosen once per batch size, as
// backends/cuda/conv_kernel.cc. Padding TensorFlow's way: cuDNN's symmetric padding when
// it gives the same sizes, otherwise an explicitly zero-padded buffer of the output.
//
// Every call only enqueues work on the context's compute stream. Errors: INVALID_ARGUMENT
// for a node whose shapes do not fit the op; cuDNN's refusals at the factory or at
// PrepareBatch as its Status. Threading: one thread at a time, with the GPU current.
#pragma once

#include <memory>

#include "backends/cuda/gpu_context.h"
#include "backends/kernel.h"
#include "common/status.h"
#include "ops/graph.h"

namespace ringtrain::gpu {

// `gpu` is not owned; it must outlive the kernel.
StatusOr<std::unique_ptr<backends::Kernel>> NewConvTransposeKernel(const ops::Node& node, const GpuContext* gpu);

}  // namespace ringtrain::gpu
