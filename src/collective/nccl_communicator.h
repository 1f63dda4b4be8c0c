// The NCCL backend's Communicator: collectives between GPUs, one rank per GPU.
// Built only when CMake found CUDA and NCCL (src/collective/cuda.cmake).
//
// Buffers should be DEVICE pointers (cudaMalloc'd, or managed memory) on this rank's
// GPU: they go straight to NCCL. A host pointer is staged instead (copied into a
// device buffer owned by the communicator, reduced, copied back), so that code
// written for RING (e.g. a CPU trainer that AUTO put on NCCL) still works, at the
// cost of two copies. A device pointer on another GPU is INVALID_ARGUMENT.
// Each operation is issued on the communicator's own stream and waited for by
// polling the stream and ncclCommGetAsyncError, so it returns within the timeout
// and Abort() can stop it. Results: every rank gets the same bits; across runs the
// bits are the same while NCCL picks the same algorithm (same GPUs, same sizes; pin
// NCCL_ALGO/NCCL_PROTO to be sure).
//
// Threading: as Communicator: one thread at a time calls the collectives (any thread;
// each call selects the GPU itself), Abort() from any thread at any time.
// After a failed, timed-out or aborted operation the NCCL communicator is aborted
// (ncclCommAbort) and every later call fails: create a new communicator.
#pragma once

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>

#include <cuda_runtime_api.h>
#include <nccl.h>

#include "collective/communicator.h"
#include "common/deadline.h"

namespace ringtrain::collective::internal {

class NcclCommunicator : public Communicator {
 public:
  // Takes ownership of comm (initialised: its async state is ncclSuccess), stream
  // (created on `device`) and scratch (one float of device memory on `device`).
  // timeout bounds every operation.
  NcclCommunicator(int rank, int size, int device, std::chrono::milliseconds timeout, ncclComm_t comm,
                   cudaStream_t stream, float* scratch);
  // Finalises the NCCL communicator (bounded wait, then ncclCommAbort if it does not
  // finish) and frees the stream and scratch buffer. Never throws.
  ~NcclCommunicator() override;
  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  const char* backend_name() const override { return "NCCL"; }
  int device() const { return device_; }

  Status AllReduce(float* data, size_t count, ReduceOp op) override;
  Status Broadcast(float* data, size_t count, int root) override;
  Status AllGather(const float* in, size_t count, float* out) override;
  // An all-reduce of one float in a device scratch buffer.
  Status Barrier() override;
  void Abort(const std::string& reason) override;

 private:
  // A host <-> device copy around a collective on a staged host buffer; bytes == 0: none.
  struct Copy {
    void* dst = nullptr;
    const void* src = nullptr;
    size_t bytes = 0;
  };
  // Copies `in` to the GPU, issues one NCCL call (enqueue() on stream_), waits for
  // it, copies `out` back: the one path every collective takes, so that abort,
  // deadline and error handling are in one place.
  template <typename Enqueue>
  Status Run(const char* op, Copy in, Enqueue enqueue, Copy out);
  // Polls until the stream is done, NCCL reports an error, Abort() is called or
  // the deadline passes.
  Status Wait(const char* op, Deadline deadline);
  // True if p is device (or managed) memory usable on device_, false if it is host
  // memory (to be staged); INVALID_ARGUMENT if null or on another GPU.
  StatusOr<bool> OnDevice(const char* op, const char* name, const void* p) const;
  // The staging buffer, grown to at least `count` floats.
  StatusOr<float*> Staging(const char* op, size_t count);
  // ncclCommFinalize, waiting at most `bound`; true if the communicator quiesced.
  bool FinalizeWithin(std::chrono::milliseconds bound);
  // Under mu_: ncclCommAbort once, recording why the communicator is unusable.
  void AbortCommLocked(const std::string& why);

  const int rank_;
  const int size_;
  const int device_;
  const std::chrono::milliseconds timeout_;
  ncclComm_t comm_;      // owned; freed (destroyed or aborted) once, see comm_live_
  cudaStream_t stream_;  // owned
  float* scratch_;       // owned device memory, one float, for Barrier()
  float* staging_ = nullptr;  // owned device memory for host buffers; only the calling thread uses it
  size_t staging_count_ = 0;  // floats in staging_

  std::atomic<bool> abort_requested_{false};  // set once by Abort(); polled by Wait()
  std::mutex mu_;
  std::string abort_reason_;  // guarded by mu_
  std::string broken_;        // guarded by mu_: why comm_ was aborted
  bool comm_live_ = true;     // guarded by mu_: false once comm_ was aborted or destroyed
  bool op_running_ = false;   // guarded by mu_: Run() is between enqueue and the end of Wait()
};

}  // namespace ringtrain::collective::internal
