#include "collective/nccl/nccl_status.h"

#include "device/cuda_error.h"

namespace ringtrain::collective::internal {

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
  return device::CudaErrorStatus(what, error,
                                 {"use the RING implementation", "free some, or use smaller buffers",
                                  "check the GPU and its driver (nvidia-smi)"});
}

}  // namespace ringtrain::collective::internal
