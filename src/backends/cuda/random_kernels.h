// The CUDA backend's kernels (backends/kernel.h) for Dropout and the augmentation ops:
// RandomFlip, RandomCrop, RandomTranslation and RandomRotation. Their random draws are
// the CPU layers' counter-based ones (backends/cuda/random_math.h), keyed by the step
// context (KernelArgs::step: seed, step, replica) and the op's key, so a job drops the
// same units and moves the same pixels on either device. As on the CPU: an inference
// Forward passes the input through (RandomCrop takes its deterministic centred path),
// and Backward applies the adjoint of the last training Forward.
//
// Every call only enqueues work on the context's compute stream; nothing waits for the
// GPU. Buffers grow in Reserve (the caller has waited for queued work).
// Threading: one thread at a time, with the kernel's GPU current.
#pragma once

#include <memory>

#include "backends/cuda/gpu_context.h"
#include "backends/kernel.h"
#include "common/status.h"
#include "ops/graph.h"

namespace ringtrain::gpu {

// kDropout: any rate in [0, 1) (op.rate, op.dropout_scale, op.name_hash, op.layer_seed).
StatusOr<std::unique_ptr<backends::Kernel>> NewDropoutKernel(const ops::Node& node, const GpuContext* gpu);
// kRandomFlip over [H, W, C] images: horizontal, vertical or both (op.flip_*; op.key).
StatusOr<std::unique_ptr<backends::Kernel>> NewRandomFlipKernel(const ops::Node& node, const GpuContext* gpu);
// kRandomCrop [H, W, C] -> [op.crop_height, op.crop_width, C], any sizes (the input
// smaller than the target takes the resize path, as on the CPU).
StatusOr<std::unique_ptr<backends::Kernel>> NewRandomCropKernel(const ops::Node& node, const GpuContext* gpu);
// kRandomTranslation and kRandomRotation over [H, W, C] images: every fill mode and
// interpolation the layers take (op.fill_mode, op.interpolation, op.fill_value; the
// factor ranges; op.key).
StatusOr<std::unique_ptr<backends::Kernel>> NewRandomAffineKernel(const ops::Node& node, const GpuContext* gpu);

}  // namespace ringtrain::gpu
