// NCCL and CUDA runtime errors as ringtrain Status, converted at the edge where the
// call is made. Each message names the call that failed, NCCL's or CUDA's own words,
// and what to try. Internal to ringtrain_collective (built only with NCCL).
#pragma once

#include <string>

#include <cuda_runtime_api.h>
#include <nccl.h>

#include "common/status.h"

namespace ringtrain::collective::internal {

// `what` failed with `result`. comm, if not null, adds ncclGetLastError(comm).
// Codes: a failed peer or network -> UNAVAILABLE; bad use -> INVALID_ARGUMENT;
// a CUDA failure inside NCCL -> FAILED_PRECONDITION; anything else -> INTERNAL.
Status NcclStatus(const std::string& what, ncclResult_t result, ncclComm_t comm = nullptr);

// `what` failed with `error`. No driver / no device -> FAILED_PRECONDITION; out of
// memory -> FAILED_PRECONDITION; anything else -> INTERNAL.
Status CudaStatus(const std::string& what, cudaError_t error);

}  // namespace ringtrain::collective::internal
