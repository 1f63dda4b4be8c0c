// The NCCL entry points of a build without NCCL (CMake found no CUDA/NCCL, or
// RINGTRAIN_CUDA=OFF): AUTO never picks NCCL, and asking for it says why.
#include "collective/backends.h"
#include "collective/nccl/nccl_info.h"

namespace ringtrain::collective::internal {

bool NcclBuilt() { return false; }
int LocalGpuCount() { return 0; }

StatusOr<std::unique_ptr<Communicator>> CreateNccl(const CommunicatorOptions&, int, int, int, store::Store*) {
  return UnimplementedError("this build of ringtrain was not built with NCCL; use RING or AUTO");
}

}  // namespace ringtrain::collective::internal

namespace ringtrain::collective {

std::string NcclBuildInfo() { return "NCCL: not built"; }

}  // namespace ringtrain::collective
