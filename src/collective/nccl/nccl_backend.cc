// The NCCL entry points of a build with CUDA and NCCL: how many GPUs this process
// can use, and creating an NCCL communicator with a bounded initialisation.
#include <thread>

#include "collective/backends.h"
#include "collective/nccl/nccl_communicator.h"
#include "collective/nccl/nccl_info.h"
#include "collective/nccl/nccl_status.h"
#include "common/logging.h"
#include "device/device.h"
#include "security/cluster_secret.h"

namespace ringtrain::collective {

namespace {

namespace ci = internal;

// Store keys (under the caller's prefix).
constexpr char kIdKey[] = "nccl/id";          // rank 0's ncclUniqueId, hex

std::string ToHex(const ncclUniqueId& id) { return security::Hex(std::string_view(id.internal, sizeof(id.internal))); }

StatusOr<ncclUniqueId> FromHex(const std::string& hex) {
  ncclUniqueId id;
  if (hex.size() != 2 * sizeof(id.internal)) {
    return InvalidArgumentError("the NCCL id in the store under '" + std::string(kIdKey) + "' has " +
                                std::to_string(hex.size()) + " hex digits, not " +
                                std::to_string(2 * sizeof(id.internal)) +
                                "; is another job (or another ringtrain version) using the same coordinator?");
  }
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  for (size_t i = 0; i < sizeof(id.internal); ++i) {
    const int hi = nibble(hex[2 * i]), lo = nibble(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) {
      return InvalidArgumentError("the NCCL id in the store under '" + std::string(kIdKey) +
                                  "' is not lower-case hex; is another job using the same coordinator?");
    }
    id.internal[i] = static_cast<char>(hi << 4 | lo);
  }
  return id;
}

StatusOr<ncclUniqueId> ShareUniqueId(int rank, store::Store* store, Deadline deadline) {
  if (rank == 0) {
    ncclUniqueId id;
    if (ncclResult_t r = ncclGetUniqueId(&id); r != ncclSuccess) {
      return ci::NcclStatus("NCCL set-up: creating the communicator id (ncclGetUniqueId)", r);
    }
    RT_RETURN_IF_ERROR(store->Set(kIdKey, ToHex(id)));
    return id;
  }
  auto hex = store->Get(kIdKey, deadline);
  if (!hex.ok()) return hex.status().WithContext("NCCL set-up: waiting for rank 0's communicator id");
  return FromHex(*hex);
}

// ncclCommInitRankConfig on a non-blocking communicator, polled so that a rank that
// never joins makes it fail at the deadline instead of hanging.
StatusOr<ncclComm_t> InitComm(int rank, int size, int device, const ncclUniqueId& id, Deadline deadline,
                              std::chrono::milliseconds timeout) {
  const std::string where = "initialising NCCL (rank " + std::to_string(rank) + " of " + std::to_string(size) +
                            " on GPU " + std::to_string(device) + ")";
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclComm_t comm = nullptr;
  ncclResult_t r = ncclCommInitRankConfig(&comm, size, id, rank, &config);
  while (r == ncclSuccess || r == ncclInProgress) {
    ncclResult_t state = ncclSuccess;
    r = ncclCommGetAsyncError(comm, &state);
    if (r != ncclSuccess) break;
    if (state == ncclSuccess) return comm;
    if (state != ncclInProgress) {
      r = state;
      break;
    }
    if (deadline.expired()) {
      ncclCommAbort(comm);
      return DeadlineExceededError(where + " did not finish within " + std::to_string(timeout.count()) +
                                   " ms: a rank did not join, or the workers cannot reach each other; check the "
                                   "other workers' logs (NCCL_DEBUG=INFO shows where NCCL stopped)");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  Status status = ci::NcclStatus(where, r, comm);  // before the abort frees comm
  if (comm != nullptr) ncclCommAbort(comm);
  return status;
}

}  // namespace

std::string NcclBuildInfo() {
  const device::RuntimeInfo& rt = device::Runtime();
  std::string text = "NCCL " + rt.nccl_runtime + ", CUDA runtime " + rt.cuda_runtime;
  text += rt.driver_version > 0 ? ", CUDA driver " + device::CudaVersionText(rt.driver_version) : ", no CUDA driver";
  return text;
}

namespace internal {

bool NcclBuilt() { return true; }

int LocalGpuCount() {
  // device::Runtime() asks CUDA once per process; the log line appears once too.
  static const int count = [] {
    const device::RuntimeInfo& rt = device::Runtime();
    if (rt.gpus.empty()) {
      RT_LOG(INFO) << "no usable GPU (" << rt.unavailable_reason << "): the GPU path is off";
      return 0;
    }
    RT_LOG(INFO) << rt.gpus.size() << " GPU(s) usable by CUDA (" << NcclBuildInfo() << ")";
    return static_cast<int>(rt.gpus.size());
  }();
  return count;
}

StatusOr<std::unique_ptr<Communicator>> CreateNccl(const CommunicatorOptions& options, int rank, int size,
                                                   int device, store::Store* store) {
  const int gpus = LocalGpuCount();
  if (gpus == 0) {
    return FailedPreconditionError("communication implementation NCCL needs a GPU and this worker has no usable one "
                                   "(see the log line above); use RING or AUTO");
  }
  if (device < 0 || device >= gpus) {
    return FailedPreconditionError("NCCL set-up: GPU " + std::to_string(device) + " does not exist here (" +
                                   std::to_string(gpus) + " visible); check CUDA_VISIBLE_DEVICES");
  }
  const Deadline deadline = Deadline::After(options.timeout);
  if (cudaError_t e = cudaSetDevice(device); e != cudaSuccess) {
    return CudaStatus("NCCL set-up: selecting GPU " + std::to_string(device), e);
  }
  RT_ASSIGN_OR_RETURN(const ncclUniqueId id, ShareUniqueId(rank, store, deadline));
  RT_ASSIGN_OR_RETURN(ncclComm_t comm, InitComm(rank, size, device, id, deadline, options.timeout));

  cudaStream_t stream = nullptr;
  float* scratch = nullptr;
  cudaError_t e = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  if (e == cudaSuccess) e = cudaMalloc(reinterpret_cast<void**>(&scratch), sizeof(float));
  if (e == cudaSuccess) e = cudaMemset(scratch, 0, sizeof(float));
  if (e != cudaSuccess) {
    ncclCommAbort(comm);
    if (scratch != nullptr) cudaFree(scratch);
    if (stream != nullptr) cudaStreamDestroy(stream);
    return CudaStatus("NCCL set-up: creating the stream and scratch buffer on GPU " + std::to_string(device), e);
  }
  char bus_id[32] = "?";
  cudaDeviceGetPCIBusId(bus_id, sizeof(bus_id), device);
  RT_LOG(INFO) << "NCCL communicator: rank " << rank << " of " << size << " on GPU " << device << " (PCI "
               << bus_id << "), " << NcclBuildInfo();
  return std::unique_ptr<Communicator>(
      new NcclCommunicator(rank, size, device, options.timeout, comm, stream, scratch));
}

}  // namespace internal
}  // namespace ringtrain::collective
