// The Activation op on the GPU (ops::OpKind::kActivation: the Activation, ReLU,
// LeakyReLU and Softmax layers): every Keras activation of ops::Activation, element-wise
// over the input, softmax over its last axis, and the ReLU / LeakyReLU layers' generic
// relu (max_value, negative_slope, threshold). The functions are
// backends/cuda/activation_kernels.h, with the CPU's per-element arithmetic.
#pragma once

#include <memory>

#include "backends/cuda/gpu_context.h"
#include "backends/kernel.h"
#include "common/status.h"
#include "ops/graph.h"

namespace ringtrain::gpu {

// The kernel of an Activation node on `gpu` (not owned; it must outlive the kernel);
// Reserve before use. INVALID_ARGUMENT for a node that is not an Activation op or whose
// input is empty.
StatusOr<std::unique_ptr<backends::Kernel>> NewActivationKernel(const ops::Node& node, const GpuContext* gpu);

}  // namespace ringtrain::gpu
