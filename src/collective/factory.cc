// Chooses the backend at run time from what every rank reports (host, GPUs).
#include <fstream>
#include <sstream>

#include <unistd.h>
#include <sys/stat.h>

#include "collective/backends.h"
#include "collective/communicator.h"
#include "collective/local_communicator.h"
#include "common/logging.h"

namespace ringtrain {
namespace ci = collective_internal;

namespace collective_internal {

std::string HostIdentity() {
  std::string boot;
  std::ifstream("/proc/sys/kernel/random/boot_id") >> boot;
  char host[256] = {};
  ::gethostname(host, sizeof(host) - 1);
  struct stat ns {};
  ::stat("/proc/self/ns/net", &ns);
  return boot + "/" + host + "/" + std::to_string(ns.st_ino);
}

bool IsWildcardHost(const std::string& host) {
  return host.empty() || host == "0.0.0.0" || host == "::" || host == "[::]" || host == "*";
}

}  // namespace collective_internal

namespace {

struct Topology {
  bool one_host = true;  // every rank shares this rank's HostIdentity()
  int min_gpus = 0;      // the fewest GPUs any rank has
  int local_index = 0;   // lower ranks on this machine (same boot), which picks a GPU
};

// GPUs belong to a machine, not to a network namespace: the kernel's boot id names it.
std::string MachineIdentity() {
  std::string boot;
  std::ifstream("/proc/sys/kernel/random/boot_id") >> boot;
  return boot;
}

// Every rank publishes "<host identity> <machine identity> <gpus>" and reads everyone's.
StatusOr<Topology> ExchangeTopology(const CommunicatorOptions& options, int rank, int size, Store* store) {
  const std::string me = ci::HostIdentity();
  const std::string machine = MachineIdentity();
  const int gpus = ci::LocalGpuCount();
  RT_RETURN_IF_ERROR(
      store->Set("topology/" + std::to_string(rank), me + " " + machine + " " + std::to_string(gpus)));
  Topology t;
  t.min_gpus = gpus;
  Deadline deadline = Deadline::After(options.timeout);
  for (int r = 0; r < size; ++r) {
    if (r == rank) continue;
    auto v = store->Get("topology/" + std::to_string(r), deadline);
    if (!v.ok()) return v.status().WithContext("waiting for rank " + std::to_string(r) + " to join the communicator");
    std::istringstream in(*v);
    std::string host, their_machine;
    int their_gpus = 0;
    in >> host >> their_machine >> their_gpus;
    t.one_host = t.one_host && host == me;
    if (r < rank && their_machine == machine) ++t.local_index;
    t.min_gpus = std::min(t.min_gpus, their_gpus);
  }
  return t;
}

}  // namespace

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
  if (size > 1 && ci::IsWildcardHost(options.listen_host)) {
    return InvalidArgumentError("listen_host '" + options.listen_host +
                                "' is a wildcard that peers cannot connect to; use this worker's own host name or "
                                "address");
  }
  if (options.implementation == Implementation::kNccl && !ci::NcclBuilt()) {
    return UnimplementedError("this build of ringtrain was not built with NCCL; use RING or AUTO");
  }
  if (size == 1 && options.implementation != Implementation::kNccl) {
    RT_LOG(INFO) << "communicator of size 1: collectives are local, no connections";
    return std::unique_ptr<Communicator>(new LocalCommunicator());
  }
  RT_ASSIGN_OR_RETURN(Topology topo, ExchangeTopology(options, rank, size, store));
  Implementation impl = options.implementation;
  if (impl == Implementation::kAuto) {
    if (!ci::NcclBuilt()) {
      RT_LOG(INFO) << "communication implementation AUTO -> RING: this build has no NCCL";
      impl = Implementation::kRing;
    } else if (topo.min_gpus == 0) {
      RT_LOG(INFO) << "communication implementation AUTO -> RING: not every worker has a GPU";
      impl = Implementation::kRing;
    } else {
      RT_LOG(INFO) << "communication implementation AUTO -> NCCL: built with NCCL and every worker has a GPU";
      impl = Implementation::kNccl;
    }
  }
  if (impl == Implementation::kNccl) {
    if (topo.min_gpus == 0) {
      return FailedPreconditionError("communication implementation NCCL needs a GPU on every worker, and at least one "
                                     "has none; use RING or AUTO");
    }
    return ci::CreateNccl(options, rank, size, topo.local_index, store);
  }
  if (options.transport == Transport::kTcp) {
    RT_LOG(INFO) << "RING over TCP: forced by the transport setting";
    return ci::CreateTcpRing(options, rank, size, store);
  }
  if (topo.one_host) {
    RT_LOG(INFO) << "RING over shared memory: all " << size << " ranks are on this host";
    return ci::CreateShm(options, rank, size, store);
  }
  RT_LOG(INFO) << "RING over TCP: the ranks are on more than one host";
  return ci::CreateTcpRing(options, rank, size, store);
}

}  // namespace ringtrain
