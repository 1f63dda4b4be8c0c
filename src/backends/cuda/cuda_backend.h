// The CUDA backend (backends/backend.h): device memory and the kernels of
// backends/cuda/op_kernels.h on one GPU's compute stream. It runs what
// CudaDeclaredSupport lists; the executor refuses the rest when it plans a model.
// Built only when CMake finds CUDA, cuBLAS and cuDNN.
#pragma once

#include <memory>

#include "backends/backend.h"
#include "backends/cuda/gpu_context.h"

namespace ringtrain::gpu {

// A backend on `gpu` (not owned; it must outlive the backend and everything it makes).
std::unique_ptr<backends::Backend> NewCudaBackend(const GpuContext* gpu);

}  // namespace ringtrain::gpu
