// The CPU backend: host memory and the AVX-512 / OpenBLAS kernels of kernels/. It runs
// every op (CpuDeclaredSupport). Its kernels are the layers' CPU passes (nn/layers),
// which the model hands the executor through its kernel factory.
#pragma once

#include <memory>

#include "backends/backend.h"

namespace ringtrain::backends {

std::unique_ptr<Backend> NewCpuBackend();

}  // namespace ringtrain::backends
