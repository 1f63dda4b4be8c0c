// The backends behind CreateCommunicator (factory.cc). Each is defined in its own
// file; the factory only chooses among them. Internal to ringtrain_collective.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "collective/communicator.h"

namespace ringtrain::collective::internal {

// RING over TCP between any hosts (ring/ring_communicator.cc / ring/ring_setup.cc).
StatusOr<std::unique_ptr<Communicator>> CreateTcpRing(const CommunicatorOptions& options, int rank, int size,
                                                      store::Store* store);
// All ranks on this host, through POSIX shared memory (shm/shm_*.cc).
StatusOr<std::unique_ptr<Communicator>> CreateShm(const CommunicatorOptions& options, int rank, int size,
                                                  store::Store* store);
// NCCL between GPUs (nccl/nccl_backend.cc, or nccl/nccl_absent.cc in a build without NCCL).
// Buffers passed to an NCCL communicator are device pointers on its GPU (host
// pointers are staged through the GPU; nccl/nccl_communicator.h). Ranks on one machine
// take GPUs in rank order (CUDA_VISIBLE_DEVICES applies); one rank per GPU.
bool NcclBuilt();
// GPUs this process can use (CUDA_VISIBLE_DEVICES applies); 0 without a driver or
// without NCCL in the build. Asked once per process, with one INFO line. Never fails.
int LocalGpuCount();
// device: this rank's GPU, which the factory derived in its topology exchange
// (options.gpu_device, or the rank's index among the ranks on its machine).
StatusOr<std::unique_ptr<Communicator>> CreateNccl(const CommunicatorOptions& options, int rank, int size,
                                                   int device, store::Store* store);

// What a rank publishes for the backend choice (the factory's topology exchange).
struct RankSite {
  std::string host;     // HostIdentity(): same value = shared memory works between them
  std::string machine;  // the boot id: same value = the same GPUs
  int gpus = 0;         // LocalGpuCount(), 0 for a rank that trains on the CPU
  int gpu_choice = CommunicatorOptions::kGpuByLocalRank;  // CommunicatorOptions::gpu_device
};
// What every rank derives from all ranks' sites (the same on every rank).
struct Topology {
  bool one_host = true;  // every rank shares this rank's host
  bool all_gpu = true;   // every rank computes on a GPU
  std::string shared;    // non-empty: two ranks on one machine would use one GPU (says which)
  int device = -1;       // this rank's GPU, -1 for none
};
Topology DeriveTopology(const std::vector<RankSite>& ranks, int rank);

// This host's identity for choosing shared memory: boot id, host name and network
// namespace, so that ranks in different namespaces (test "hosts") use TCP.
std::string HostIdentity();
// "", "0.0.0.0", "::", "*": addresses peers cannot connect to.
bool IsWildcardHost(const std::string& host);

}  // namespace ringtrain::collective::internal
