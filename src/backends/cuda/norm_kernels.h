// The CUDA backend's kernels (backends/kernel.h) for the normalization ops, plain CUDA
// kernels (backends/cuda/norm_launch.h) with the CPU layers' semantics and arithmetic:
//   - kBatchNorm (nn/layers/batch_norm.h): per channel (the last axis) over the batch and
//     every other axis, NHWC. Training mode (op.training_mode and a training Forward):
//     batch statistics, the reduced statistics (batch mean and biased variance) written at
//     args.grads + node.first_stat, the moving statistics updated from their sums in
//     ApplyReducedStats. Inference mode (a frozen layer, or an evaluation Forward): the
//     moving statistics. Synchronized: the batch moments and the input gradient's sums
//     over every replica, through StepContext::all_reduce_sum on the host.
//     cuDNN's batch normalization is not used: its sums are neither in double nor in a
//     documented order, and it has no synchronized mode.
//   - kLayerNorm (nn/layers/layer_norm.h): per example over the trailing op.row_size
//     elements, gamma and beta of that shape; the same in training and inference.
// Both honour center / scale false (no beta / gamma) and frozen weights (no gradient).
//
// Every call enqueues work on the context's compute stream and returns; the one
// exception is a synchronized BatchNorm's training Forward and Backward across several
// replicas, which wait (GpuContext::SyncCompute, bounded) for the sums they hand to the
// host all-reduce.
//
// Threading: one thread at a time, with the kernel's GPU current.
#pragma once

#include <memory>

#include "backends/cuda/gpu_context.h"
#include "backends/kernel.h"
#include "common/status.h"
#include "ops/graph.h"

namespace ringtrain::gpu {

// The BatchNorm kernel for `node` (op kind kBatchNorm) on `gpu` (not owned; it must
// outlive the kernel). Refuses (UNIMPLEMENTED) an op with a fused activation other than
// linear, and (INVALID_ARGUMENT) a node whose input, weights or statistics do not have
// the layer's shapes.
StatusOr<std::unique_ptr<backends::Kernel>> NewBatchNormKernel(const ops::Node& node, const GpuContext* gpu);

// The LayerNorm kernel for `node` (op kind kLayerNorm) on `gpu`. Refuses
// (INVALID_ARGUMENT) a row size that does not divide the input, or weights of another size.
StatusOr<std::unique_ptr<backends::Kernel>> NewLayerNormKernel(const ops::Node& node, const GpuContext* gpu);

}  // namespace ringtrain::gpu
