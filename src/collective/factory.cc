// Chooses the backend at run time from what every rank reports (host, GPUs).
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <unistd.h>
#include <sys/stat.h>

#include "collective/backends.h"
#include "collective/communicator.h"
#include "collective/local_communicator.h"
#include "common/logging.h"

namespace ringtrain::collective {
namespace ci = internal;

namespace internal {

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

namespace {

// Rank r's GPU: its own choice, or the next one on its machine by local index.
int DeviceOf(int choice, int gpus, int local_index) {
  if (gpus <= 0 || choice == CommunicatorOptions::kCpuRank) return -1;
  if (choice >= 0) return choice < gpus ? choice : -1;
  return local_index % gpus;
}

}  // namespace

Topology DeriveTopology(const std::vector<RankSite>& ranks, int rank) {
  Topology t;
  std::map<std::pair<std::string, int>, int> users;  // (machine, GPU) -> the first rank on it
  for (int r = 0; r < static_cast<int>(ranks.size()); ++r) {
    t.one_host = t.one_host && ranks[r].host == ranks[rank].host;
    int local_index = 0;
    for (int q = 0; q < r; ++q) local_index += ranks[q].machine == ranks[r].machine ? 1 : 0;
    const int device = DeviceOf(ranks[r].gpu_choice, ranks[r].gpus, local_index);
    if (r == rank) t.device = device;
    if (device < 0) {
      t.all_gpu = false;
      continue;
    }
    auto [it, fresh] = users.emplace(std::make_pair(ranks[r].machine, device), r);
    if (!fresh && t.shared.empty()) {
      t.shared = "ranks " + std::to_string(it->second) + " and " + std::to_string(r) + " share GPU " +
                 std::to_string(device) + " of one machine";
    }
  }
  return t;
}

}  // namespace internal

namespace {

// GPUs belong to a machine, not to a network namespace: the kernel's boot id names it.
std::string MachineIdentity() {
  std::string boot;
  std::ifstream("/proc/sys/kernel/random/boot_id") >> boot;
  return boot;
}

// Every rank publishes "<host identity> <machine identity> <gpus> <gpu choice>" and
// reads everyone's; all ranks then derive the same picture.
StatusOr<ci::Topology> ExchangeTopology(const CommunicatorOptions& options, int rank, int size, store::Store* store) {
  // A CPU rank does not ask CUDA at all.
  const int gpus = options.gpu_device == CommunicatorOptions::kCpuRank ? 0 : ci::LocalGpuCount();
  const std::string mine = ci::HostIdentity() + " " + MachineIdentity() + " " + std::to_string(gpus) + " " +
                           std::to_string(options.gpu_device);
  RT_RETURN_IF_ERROR(store->Set("topology/" + std::to_string(rank), mine));
  Deadline deadline = Deadline::After(options.timeout);
  std::vector<ci::RankSite> ranks(size);
  for (int r = 0; r < size; ++r) {
    std::string text = mine;
    if (r != rank) {
      auto v = store->Get("topology/" + std::to_string(r), deadline);
      if (!v.ok()) return v.status().WithContext("waiting for rank " + std::to_string(r) + " to join the communicator");
      text = *v;
    }
    std::istringstream in(text);
    in >> ranks[r].host >> ranks[r].machine >> ranks[r].gpus >> ranks[r].gpu_choice;
  }
  return ci::DeriveTopology(ranks, rank);
}

}  // namespace

StatusOr<std::unique_ptr<Communicator>> CreateCommunicator(const CommunicatorOptions& options, int rank,
                                                           int size, store::Store* store) {
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
  RT_ASSIGN_OR_RETURN(ci::Topology topo, ExchangeTopology(options, rank, size, store));
  Implementation impl = options.implementation;
  if (impl == Implementation::kAuto) {
    if (!ci::NcclBuilt()) {
      RT_LOG(INFO) << "communication implementation AUTO -> RING: this build has no NCCL";
      impl = Implementation::kRing;
    } else if (!topo.all_gpu) {
      RT_LOG(INFO) << "communication implementation AUTO -> RING: not every worker trains on a GPU";
      impl = Implementation::kRing;
    } else if (!topo.shared.empty()) {
      RT_LOG(INFO) << "communication implementation AUTO -> RING: " << topo.shared
                   << " (NCCL needs a GPU per rank; RING stages through host memory)";
      impl = Implementation::kRing;
    } else {
      RT_LOG(INFO) << "communication implementation AUTO -> NCCL: built with NCCL and every worker has a GPU";
      impl = Implementation::kNccl;
    }
  }
  if (impl == Implementation::kNccl) {
    if (!topo.all_gpu) {
      return FailedPreconditionError("communication implementation NCCL needs a GPU on every worker, and at least one "
                                     "has none or trains on the CPU; use RING or AUTO");
    }
    if (!topo.shared.empty()) {
      return FailedPreconditionError("communication implementation NCCL needs a GPU per rank, but " + topo.shared +
                                     "; use RING or AUTO, or give each worker its own GPU (CUDA_VISIBLE_DEVICES)");
    }
    return ci::CreateNccl(options, rank, size, topo.device, store);
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

}  // namespace ringtrain::collective
