// TEMPORARY during development of the shared-memory backend: replaced by shm_*.cc.
// Until then RING on one host uses TCP.
#include "collective/backends.h"
#include "common/logging.h"

namespace ringtrain::collective_internal {

StatusOr<std::unique_ptr<Communicator>> CreateShm(const CommunicatorOptions& options, int rank, int size,
                                                  Store* store) {
  return CreateTcpRing(options, rank, size, store);
}

}  // namespace ringtrain::collective_internal
