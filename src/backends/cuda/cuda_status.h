// CUDA runtime, cuBLAS and cuDNN return codes as ringtrain Status, converted at the
// call site. Each message names the call, the GPU, the library's own words for the
// error, and what to try. OK for success, so calls read
//   RT_RETURN_IF_ERROR(CudaCheck(cudaMalloc(...), "cudaMalloc(parameters)", gpu));
// Codes: no driver, no device or out of memory -> FAILED_PRECONDITION (the GPU cannot
// be used as asked); anything else -> INTERNAL (a bug or a broken GPU).
#pragma once

#include <string>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include "common/status.h"

namespace ringtrain::gpu {

Status CudaError(cudaError_t error, const std::string& what, int gpu);
Status CublasError(cublasStatus_t status, const std::string& what, int gpu);
Status CudnnError(cudnnStatus_t status, const std::string& what, int gpu);

inline Status CudaCheck(cudaError_t error, const std::string& what, int gpu) {
  return error == cudaSuccess ? Status::Ok() : CudaError(error, what, gpu);
}
inline Status CublasCheck(cublasStatus_t status, const std::string& what, int gpu) {
  return status == CUBLAS_STATUS_SUCCESS ? Status::Ok() : CublasError(status, what, gpu);
}
inline Status CudnnCheck(cudnnStatus_t status, const std::string& what, int gpu) {
  return status == CUDNN_STATUS_SUCCESS ? Status::Ok() : CudnnError(status, what, gpu);
}

}  // namespace ringtrain::gpu
