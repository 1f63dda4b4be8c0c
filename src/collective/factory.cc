// Chooses the backend at run time. This build has no NCCL, so AUTO means RING.
#include "collective/communicator.h"
#include "collective/local_communicator.h"
#include "collective/ring_communicator.h"
#include "common/logging.h"

namespace ringtrain {

StatusOr<std::unique_ptr<Communicator>> CreateCommunicator(const CommunicatorOptions& options, int rank,
                                                           int size, Store* store) {
  if (size < 1) return InvalidArgumentError("communicator size must be at least 1, got " + std::to_string(size));
  if (rank < 0 || rank >= size) {
    return InvalidArgumentError("rank " + std::to_string(rank) + " is out of range for " + std::to_string(size) +
                                " ranks");
  }
  if (options.timeout.count() <= 0) {
    return InvalidArgumentError("communicator timeout must be positive, got " +
                                std::to_string(options.timeout.count()) + " ms");
  }
  Implementation impl = options.implementation;
  switch (impl) {
    case Implementation::kNccl:
      return UnimplementedError("this build of ringtrain was not built with NCCL; use RING or AUTO");
    case Implementation::kAuto:
      RT_LOG(INFO) << "communication implementation AUTO -> RING: this build has no NCCL";
      impl = Implementation::kRing;
      break;
    case Implementation::kRing:
      break;
  }
  if (size == 1) {
    RT_LOG(INFO) << "communicator of size 1: collectives are local, no connections";
    return std::unique_ptr<Communicator>(new LocalCommunicator());
  }
  return RingCommunicator::Create(options, rank, size, store);
}

}  // namespace ringtrain
