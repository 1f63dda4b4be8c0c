// One classification of CUDA runtime errors for every library that calls CUDA (the
// NCCL backend, the GPU engine). Header-only: it needs the CUDA headers, which only
// those libraries have; the device library itself does not depend on it.
#pragma once

#include <string>

#include <cuda_runtime_api.h>

#include "common/status.h"

namespace ringtrain::device {

// What the caller's user should try, per kind of failure.
struct CudaErrorAdvice {
  const char* no_gpu;         // appended after "no usable GPU: check the driver ... or "
  const char* out_of_memory;  // appended after "the GPU is out of memory: "
  const char* other;          // appended after "; " for anything else
};

// "<what>: CUDA error <name>: <text>; <advice>". No driver, no device or out of memory
// -> FAILED_PRECONDITION (the GPU cannot be used as asked); anything else -> INTERNAL.
inline Status CudaErrorStatus(const std::string& what, cudaError_t error, const CudaErrorAdvice& advice) {
  const std::string message = what + ": CUDA error " + cudaGetErrorName(error) + ": " + cudaGetErrorString(error);
  switch (error) {
    case cudaErrorInsufficientDriver:
    case cudaErrorNoDevice:
    case cudaErrorInvalidDevice:
    case cudaErrorDevicesUnavailable:
      return FailedPreconditionError(message + "; no usable GPU: check the driver (nvidia-smi) and " +
                                     "CUDA_VISIBLE_DEVICES, or " + advice.no_gpu);
    case cudaErrorMemoryAllocation:
      return FailedPreconditionError(message + "; the GPU is out of memory: " + advice.out_of_memory);
    default:
      return InternalError(message + "; " + advice.other);
  }
}

}  // namespace ringtrain::device
