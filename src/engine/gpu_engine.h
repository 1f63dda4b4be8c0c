// The GPU engine: the model of a job on one CUDA GPU, run by the one executor
// (executor/executor.h) on the CUDA backend (backends/cuda: cuDNN convolutions, FP32, no
// TF32, deterministic algorithms; cuBLAS dense layers; CUDA kernels for the rest), with
// the loss and metrics (backends/cuda/objective_kernels.h) and the optimizer update and
// regularization (backends/cuda/optimizer_kernels.h) on the device. Weights, gradients and optimizer state stay in device memory
// across steps; only the input batches go up (pinned, double-buffered, on a copy
// stream, so the next batch is copied while the current step computes) and only the
// metrics come down, plus the gradients when the communicator needs host memory
// (RING stages through a pinned host buffer; NCCL reduces the device buffer itself).
//
// Built only when CMake finds CUDA, cuBLAS and cuDNN (RINGTRAIN_HAVE_CUDA).
// Results agree with the CPU engine within floating-point tolerance (the parity tests
// in tests/gpu ask for a relative error of at most 1e-4); on one GPU model the same
// job gives the same bits every run.
#pragma once

#include <memory>

#include "common/status.h"
#include "engine/engine.h"
#include "nn/model.h"
#include "nn/optimizers/optimizer.h"

namespace ringtrain::gpu {

// An engine on CUDA device `ordinal` (as numbered under CUDA_VISIBLE_DEVICES) for
// `model` and `optimizer` (not owned; they must outlive it), taking batches of at most
// max_batch examples. Copies the host weights and optimizer state in (LoadFromHost).
// FAILED_PRECONDITION naming the CUDA/cuDNN/cuBLAS error when the device cannot be
// used or memory runs out.
StatusOr<std::unique_ptr<engine::Engine>> NewGpuEngine(nn::Model* model, nn::Optimizer* optimizer, int max_batch,
                                                       int ordinal);

}  // namespace ringtrain::gpu
