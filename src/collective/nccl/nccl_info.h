// What this build has of CUDA and NCCL, for `ringtrain version` and start-up logs.
// Defined in nccl_backend.cc, or in nccl_absent.cc for a build without NCCL.
#pragma once

#include <string>

namespace ringtrain::collective {

// e.g. "NCCL 2.28.9, CUDA runtime 13.0, CUDA driver 13.0", "NCCL 2.28.9, CUDA
// runtime 13.0, no CUDA driver", or "NCCL: not built". Versions are the ones loaded
// at run time. Cheap, never fails, and does not touch a GPU.
std::string NcclBuildInfo();

}  // namespace ringtrain::collective
