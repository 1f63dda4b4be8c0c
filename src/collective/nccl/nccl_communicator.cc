#include "collective/nccl/nccl_communicator.h"

#include <algorithm>
#include <cstdio>
#include <thread>

#include "collective/nccl/nccl_status.h"
#include "common/logging.h"

namespace ringtrain::collective::internal {
namespace {

// Polling: a collective on small buffers finishes in microseconds, so the wait
// first yields, then sleeps so that a long one does not burn a core.
constexpr int kYieldsBeforeSleeping = 200;
constexpr std::chrono::microseconds kPollSleep(100);
// The most the destructor waits for ncclCommFinalize before aborting instead.
constexpr std::chrono::milliseconds kFinalizeBound(5000);

std::string PointerText(const void* p) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%p", p);
  return buf;
}

ncclDataType_t NcclType(DataType type) {
  switch (type) {
    case DataType::kFloat32: return ncclFloat32;
    case DataType::kFloat64: return ncclFloat64;
    case DataType::kInt32: return ncclInt32;
    case DataType::kInt64: return ncclInt64;
    case DataType::kUint8: return ncclUint8;
  }
  return ncclFloat32;  // unreachable: CommunicatorBase checked the type
}

}  // namespace

NcclCommunicator::NcclCommunicator(int rank, int size, int device, std::chrono::milliseconds timeout,
                                   ncclComm_t comm, cudaStream_t stream, float* scratch)
    : CommunicatorBase(rank, size),
      device_(device),
      timeout_(timeout),
      comm_(comm),
      stream_(stream),
      scratch_(scratch) {}

NcclCommunicator::~NcclCommunicator() {
  // The destructor may run on a thread whose current GPU is another one.
  cudaSetDevice(device_);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (comm_live_) {
      if (FinalizeWithin(std::min(timeout_, kFinalizeBound))) {
        ncclCommDestroy(comm_);
      } else {
        RT_LOG(WARNING) << "NCCL communicator (rank " << rank() << " of " << size()
                        << ") did not finalise in time; aborting it";
        ncclCommAbort(comm_);
      }
      comm_live_ = false;
    }
  }
  cudaFree(scratch_);
  if (staging_ != nullptr) cudaFree(staging_);
  cudaStreamDestroy(stream_);
  cudaGetLastError();  // a failure here is not this thread's next CUDA call's business
}

bool NcclCommunicator::FinalizeWithin(std::chrono::milliseconds bound) {
  ncclResult_t r = ncclCommFinalize(comm_);
  if (r != ncclSuccess && r != ncclInProgress) return false;
  Deadline deadline = Deadline::After(bound);
  for (;;) {
    ncclResult_t state = ncclSuccess;
    if (ncclCommGetAsyncError(comm_, &state) != ncclSuccess) return false;
    if (state == ncclSuccess) return true;
    if (state != ncclInProgress || deadline.expired()) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

void NcclCommunicator::AbortCommLocked() {
  if (!comm_live_) return;
  ncclCommAbort(comm_);
  comm_live_ = false;
}

void NcclCommunicator::OnAbort() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!op_running_) AbortCommLocked();
}

std::string NcclCommunicator::Where(const char* op) const {
  return std::string(op) + " (rank " + std::to_string(rank()) + " of " + std::to_string(size()) + ")";
}

template <typename Enqueue>
Status NcclCommunicator::Run(const char* op, Copy in, Enqueue enqueue, Copy out) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (aborted()) return AbortStatus();  // Abort() came after the base's check
    if (!comm_live_) {
      return FailedPreconditionError(std::string(op) + ": the NCCL communicator was aborted; create a new one");
    }
    op_running_ = true;
  }
  const Deadline deadline = Deadline::After(timeout_);
  const std::string where = Where(op);
  auto copy = [this](const Copy& c, cudaMemcpyKind kind) {
    return c.bytes == 0 ? cudaSuccess : cudaMemcpyAsync(c.dst, c.src, c.bytes, kind, stream_);
  };
  Status status;
  if (cudaError_t e = cudaSetDevice(device_); e != cudaSuccess) {
    status = CudaStatus(where + ": selecting GPU " + std::to_string(device_), e);
  } else if (e = copy(in, cudaMemcpyHostToDevice); e != cudaSuccess) {
    status = CudaStatus(where + ": copying the host buffer to GPU " + std::to_string(device_), e);
  } else if (ncclResult_t r = enqueue(); r != ncclSuccess && r != ncclInProgress) {
    // ncclInProgress: a non-blocking communicator is still enqueueing; Wait() sees it finish.
    status = NcclStatus(where, r, comm_);
  } else {
    status = Wait(op, deadline);
    // The copy back is issued only once NCCL has finished enqueueing (Wait saw
    // ncclSuccess), as a non-blocking communicator requires.
    if (status.ok() && out.bytes > 0) {
      e = copy(out, cudaMemcpyDeviceToHost);
      status = e == cudaSuccess ? Wait(op, deadline) : CudaStatus(where + ": copying the result to the host", e);
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  op_running_ = false;
  if (aborted() || !status.ok()) AbortCommLocked();
  return status;
}

Status NcclCommunicator::Wait(const char* op, Deadline deadline) {
  const std::string where = Where(op);
  for (int polls = 0;; ++polls) {
    if (aborted()) return AbortStatus();
    ncclResult_t async = ncclSuccess;
    if (ncclResult_t r = ncclCommGetAsyncError(comm_, &async); r != ncclSuccess) {
      return NcclStatus(where + ": asking NCCL for its state", r, comm_);
    }
    if (async != ncclSuccess && async != ncclInProgress) return NcclStatus(where, async, comm_);
    if (async == ncclSuccess) {
      cudaError_t e = cudaStreamQuery(stream_);
      if (e == cudaSuccess) return Status::Ok();
      if (e != cudaErrorNotReady) return CudaStatus(where + " on GPU " + std::to_string(device_), e);
    }
    if (deadline.expired()) {
      return DeadlineExceededError(where + " did not complete within " + std::to_string(timeout_.count()) +
                                   " ms: a peer is dead, hung, or did not issue the same collective; check the "
                                   "other workers' logs (NCCL_DEBUG=INFO shows NCCL's side)");
    }
    if (polls < kYieldsBeforeSleeping) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(kPollSleep);
    }
  }
}

StatusOr<bool> NcclCommunicator::OnDevice(const char* op, const char* name, const void* p) const {
  if (p == nullptr) return InvalidArgumentError(std::string(op) + ": " + name + " is null but count is > 0");
  cudaPointerAttributes attr{};
  if (cudaPointerGetAttributes(&attr, p) != cudaSuccess) {
    cudaGetLastError();  // memory CUDA does not know is plain host memory
    return false;
  }
  if (attr.type == cudaMemoryTypeManaged) return true;
  if (attr.type != cudaMemoryTypeDevice) return false;
  if (attr.device != device_) {
    return InvalidArgumentError(std::string(op) + ": " + name + " (" + PointerText(p) + ") is on GPU " +
                                std::to_string(attr.device) + " but this rank's communicator uses GPU " +
                                std::to_string(device_) + "; allocate it on the communicator's GPU");
  }
  return true;
}

StatusOr<char*> NcclCommunicator::Staging(const char* op, size_t bytes) {
  if (bytes <= staging_bytes_) return staging_;
  if (staging_ != nullptr) cudaFree(staging_);
  staging_ = nullptr;
  staging_bytes_ = 0;
  if (cudaError_t e = cudaSetDevice(device_); e != cudaSuccess) {
    return CudaStatus(std::string(op) + ": selecting GPU " + std::to_string(device_), e);
  }
  if (cudaError_t e = cudaMalloc(reinterpret_cast<void**>(&staging_), bytes); e != cudaSuccess) {
    staging_ = nullptr;
    return CudaStatus(std::string(op) + ": allocating " + std::to_string(bytes) + " bytes on GPU " +
                          std::to_string(device_) + " to stage a host buffer",
                      e);
  }
  staging_bytes_ = bytes;
  return staging_;
}

Status NcclCommunicator::DoAllReduce(void* data, size_t count, DataType type, ReduceOp op) {
  if (count == 0) return Run("AllReduce", {}, [] { return ncclSuccess; }, {});
  RT_ASSIGN_OR_RETURN(const bool on_device, OnDevice("AllReduce", "data", data));
  const size_t bytes = count * DataTypeSize(type);
  void* buf = data;
  Copy in, out;
  if (!on_device) {
    RT_ASSIGN_OR_RETURN(buf, Staging("AllReduce", bytes));
    in = {buf, data, bytes};
    out = {data, buf, bytes};
  }
  const ncclRedOp_t nccl_op = op == ReduceOp::kMean ? ncclAvg : ncclSum;
  const ncclDataType_t nccl_type = NcclType(type);
  return Run(
      "AllReduce", in, [&] { return ncclAllReduce(buf, buf, count, nccl_type, nccl_op, comm_, stream_); }, out);
}

Status NcclCommunicator::DoBroadcast(void* data, size_t count, DataType type, int root) {
  if (count == 0) return Run("Broadcast", {}, [] { return ncclSuccess; }, {});
  RT_ASSIGN_OR_RETURN(const bool on_device, OnDevice("Broadcast", "data", data));
  const size_t bytes = count * DataTypeSize(type);
  void* buf = data;
  Copy in, out;
  if (!on_device) {
    RT_ASSIGN_OR_RETURN(buf, Staging("Broadcast", bytes));
    if (rank() == root) in = {buf, data, bytes};  // the others' data is overwritten
    out = {data, buf, bytes};
  }
  const ncclDataType_t nccl_type = NcclType(type);
  return Run(
      "Broadcast", in, [&] { return ncclBroadcast(buf, buf, count, nccl_type, root, comm_, stream_); }, out);
}

Status NcclCommunicator::DoAllGather(const void* in, size_t count, DataType type, void* out) {
  if (count == 0) return Run("AllGather", {}, [] { return ncclSuccess; }, {});
  RT_ASSIGN_OR_RETURN(const bool in_on_device, OnDevice("AllGather", "in", in));
  RT_ASSIGN_OR_RETURN(const bool out_on_device, OnDevice("AllGather", "out", out));
  const size_t in_bytes = count * DataTypeSize(type);
  const size_t out_bytes = in_bytes * static_cast<size_t>(size());
  const void* send = in;
  void* recv = out;
  Copy copy_in, copy_out;
  if (!in_on_device || !out_on_device) {
    // One staging buffer: [in's copy] [out's copy], each only if needed.
    const size_t in_part = in_on_device ? 0 : in_bytes;
    RT_ASSIGN_OR_RETURN(char* staging, Staging("AllGather", in_part + (out_on_device ? 0 : out_bytes)));
    if (!in_on_device) {
      send = staging;
      copy_in = {staging, in, in_bytes};
    }
    if (!out_on_device) {
      recv = staging + in_part;
      copy_out = {out, recv, out_bytes};
    }
  }
  const ncclDataType_t nccl_type = NcclType(type);
  return Run(
      "AllGather", copy_in, [&] { return ncclAllGather(send, recv, count, nccl_type, comm_, stream_); }, copy_out);
}

Status NcclCommunicator::DoBarrier() {
  return Run(
      "Barrier", {}, [&] { return ncclAllReduce(scratch_, scratch_, 1, ncclFloat32, ncclSum, comm_, stream_); }, {});
}

}  // namespace ringtrain::collective::internal
