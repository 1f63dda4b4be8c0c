#include "backends/cuda/cuda_status.h"

#include "device/cuda_error.h"

namespace ringtrain::gpu {
namespace {

std::string Prefix(const std::string& what, int gpu) { return what + " on GPU " + std::to_string(gpu) + " failed: "; }

}  // namespace

Status CudaError(cudaError_t error, const std::string& what, int gpu) {
  return device::CudaErrorStatus(what + " on GPU " + std::to_string(gpu) + " failed", error,
                                 {"set the job's \"device\" to \"cpu\"",
                                  "lower batch_size_per_worker or free the GPU (nvidia-smi shows who holds it)",
                                  "check the GPU and its driver (nvidia-smi); CUDA_LAUNCH_BLOCKING=1 pins down which "
                                  "kernel failed"});
}

Status CublasError(cublasStatus_t status, const std::string& what, int gpu) {
  const std::string message =
      Prefix(what, gpu) + "cuBLAS error " + cublasGetStatusName(status) + ": " + cublasGetStatusString(status);
  switch (status) {
    case CUBLAS_STATUS_NOT_INITIALIZED:
    case CUBLAS_STATUS_ARCH_MISMATCH:
      return FailedPreconditionError(message + "; cuBLAS cannot use this GPU: check the driver and the CUDA version "
                                               "(nvidia-smi)");
    case CUBLAS_STATUS_ALLOC_FAILED:
      return FailedPreconditionError(message + "; the GPU is out of memory: lower batch_size_per_worker");
    default:
      return InternalError(message + "; check the GPU and its driver (nvidia-smi)");
  }
}

Status CudnnError(cudnnStatus_t status, const std::string& what, int gpu) {
  const std::string message = Prefix(what, gpu) + "cuDNN error " + std::to_string(static_cast<int>(status)) + ": " +
                              cudnnGetErrorString(status);
  // cuDNN 9 groups its codes by thousands: 3xxx cannot run here, 4xxx internal
  // (4003/4004 out of memory), 5xxx the execution failed.
  const int code = static_cast<int>(status);
  if (code == CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED ||
      code == CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED) {
    return FailedPreconditionError(message + "; out of memory: lower batch_size_per_worker or free the GPU");
  }
  if (code == CUDNN_STATUS_NOT_INITIALIZED || code == CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED ||
      code == CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH || (code >= 3000 && code < 4000)) {
    return FailedPreconditionError(message + "; cuDNN cannot run this on this GPU: check the cuDNN, CUDA and driver "
                                             "versions (nvidia-smi), or set the job's \"device\" to \"cpu\"");
  }
  return InternalError(message + "; check the GPU and its driver (nvidia-smi); CUDNN_LOGERR_DBG=1 makes cuDNN "
                                 "say more");
}

}  // namespace ringtrain::gpu
