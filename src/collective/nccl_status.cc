#include "collective/nccl_status.h"

namespace ringtrain::collective_internal {

Status NcclStatus(const std::string& what, ncclResult_t result, ncclComm_t comm) {
  std::string message = what + ": NCCL error: " + ncclGetErrorString(result);
  if (comm != nullptr) {
    const char* last = ncclGetLastError(comm);
    if (last != nullptr && last[0] != '\0') message += " (" + std::string(last) + ")";
  }
  switch (result) {
    case ncclRemoteError:
      return UnavailableError(message + "; a peer failed or disconnected: check the other workers' logs");
    case ncclSystemError:
      return UnavailableError(message +
                              "; a system call or the network between workers failed: check that they can reach "
                              "each other (NCCL_SOCKET_IFNAME picks the interface); NCCL_DEBUG=INFO shows more");
    case ncclInvalidArgument:
    case ncclInvalidUsage:
      return InvalidArgumentError(message +
                                  "; NCCL rejected the call (two ranks on one GPU, or a host pointer where device "
                                  "memory is needed, are the usual causes); NCCL_DEBUG=WARN says which");
    case ncclUnhandledCudaError:
      return FailedPreconditionError(message +
                                     "; a CUDA call inside NCCL failed: check the GPU and its driver (nvidia-smi); "
                                     "NCCL_DEBUG=WARN shows the CUDA error");
    default:
      return InternalError(message + "; rerun with NCCL_DEBUG=INFO for NCCL's account of it");
  }
}

Status CudaStatus(const std::string& what, cudaError_t error) {
  std::string message =
      what + ": CUDA error " + cudaGetErrorName(error) + ": " + cudaGetErrorString(error);
  switch (error) {
    case cudaErrorInsufficientDriver:
    case cudaErrorNoDevice:
    case cudaErrorInvalidDevice:
    case cudaErrorDevicesUnavailable:
      return FailedPreconditionError(message +
                                     "; no usable GPU: check the driver (nvidia-smi) and CUDA_VISIBLE_DEVICES, or "
                                     "use the RING implementation");
    case cudaErrorMemoryAllocation:
      return FailedPreconditionError(message + "; the GPU is out of memory: free some, or use smaller buffers");
    default:
      return InternalError(message + "; check the GPU and its driver (nvidia-smi)");
  }
}

}  // namespace ringtrain::collective_internal
