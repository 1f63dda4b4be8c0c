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
// NCCL_ALGO/NCCL_PROTO to be sure). NCCL's order of additions is its own, not RING's
// (sum_order.h): a job on NCCL does not give the model bytes of the same job on RING.
//
// Every DataType maps to NCCL's own (ncclFloat32, ncclFloat64, ncclInt32, ncclInt64,
// ncclUint8); NCCL's sums on integers wrap, as the other backends' do. accepts_device_memory()
// is true: a GPU trainer hands this backend its device gradients.
//
// Threading: as Communicator: one thread at a time calls the collectives (any thread;
// each call selects the GPU itself), Abort() from any thread at any time.
// After a failed, timed-out or aborted operation the NCCL communicator is aborted
// (ncclCommAbort) and every later call fails with the first failure (CommunicatorBase):
// create a new communicator.
#pragma once

#include <chrono>
#include <mutex>
#include <string>

#include <cuda_runtime_api.h>
#include <nccl.h>

#include "collective/communicator_base.h"
#include "common/deadline.h"

namespace ringtrain::collective::internal {

class NcclCommunicator : public CommunicatorBase {
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

  const char* backend_name() const override { return "NCCL"; }
  bool accepts_device_memory() const override { return true; }
  int device() const { return device_; }

 protected:
  Status DoAllReduce(void* data, size_t count, DataType type, ReduceOp op) override;
  Status DoBroadcast(void* data, size_t count, DataType type, int root) override;
  Status DoAllGather(const void* in, size_t count, DataType type, void* out) override;
  // An all-reduce of one float in a device scratch buffer.
  Status DoBarrier() override;
  // Aborts the NCCL communicator now, unless an operation is running: that one sees
  // aborted() in Wait() and aborts it itself, so that ncclCommAbort never races with
  // its own NCCL calls.
  void OnAbort() override;

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
  // "AllReduce (rank 1 of 4)": where a failure happened, for messages.
  std::string Where(const char* op) const;
  // Polls until the stream is done, NCCL reports an error, Abort() is called or
  // the deadline passes.
  Status Wait(const char* op, Deadline deadline);
  // True if p is device (or managed) memory usable on device_, false if it is host
  // memory (to be staged); INVALID_ARGUMENT if null or on another GPU.
  StatusOr<bool> OnDevice(const char* op, const char* name, const void* p) const;
  // The staging buffer, grown to at least `bytes`.
  StatusOr<char*> Staging(const char* op, size_t bytes);
  // ncclCommFinalize, waiting at most `bound`; true if the communicator quiesced.
  bool FinalizeWithin(std::chrono::milliseconds bound);
  // Under mu_: ncclCommAbort once.
  void AbortCommLocked();

  const int device_;
  const std::chrono::milliseconds timeout_;
  ncclComm_t comm_;      // owned; freed (destroyed or aborted) once, see comm_live_
  cudaStream_t stream_;  // owned
  float* scratch_;       // owned device memory, one float, for Barrier()
  char* staging_ = nullptr;   // owned device memory for host buffers; only the calling thread uses it
  size_t staging_bytes_ = 0;  // bytes in staging_

  std::mutex mu_;
  bool comm_live_ = true;     // guarded by mu_: false once comm_ was aborted or destroyed
  bool op_running_ = false;   // guarded by mu_: Run() is between enqueue and the end of Wait()
};

}  // namespace ringtrain::collective::internal
