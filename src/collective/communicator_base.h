// What every backend (TCP ring, shared memory, NCCL, the one-rank communicator) shares,
// so that each holds only its transport: CommunicatorBase checks every call's arguments
// once, keeps the abort reason and the sticky broken status, and dispatches to the
// backend's Do* functions. (The one reduction routine they share is in reduce.h.)
//
// Where state lives:
//  - AbortSignal (here): the abort flag and reason, set once by Abort() from any thread.
//    Backends poll aborted() in their wait loops; the shared-memory Group reads the same
//    signal (it is handed a pointer), so there is one abort state per communicator.
//  - broken status (here): the first failure of any operation, returned by every later
//    call (ABORTED instead once aborted). Touched only by the thread running operations.
//  - what peers must learn (the backends): the ring shuts its connections down
//    (OnAbort/OnBroken), the shared-memory Group writes the segment's cross-process
//    failure record, NCCL aborts its ncclComm.
//
// Call flow: AllReduce/Broadcast/AllGather/Barrier (final) -> aborted? broken? ->
// argument checks (INVALID_ARGUMENT, communicator stays usable) -> Do* -> on failure the
// communicator is broken (OnBroken once) and the failure returned. Zero-count operations
// still run as collectives (every rank must issue them; the ring checks their headers).
//
// Threading: as Communicator. Abort() may be called from any thread but not concurrently
// with the destructor; OnAbort runs on the aborting thread, everything else on the
// thread running operations.
#pragma once

#include <atomic>
#include <mutex>
#include <string>

#include "collective/communicator.h"

namespace ringtrain::collective {

// Set once, read from any thread. The reason is written before the flag is released
// and never again, so a reader that saw the flag reads the reason without a lock.
class AbortSignal {
 public:
  // Records the reason (an empty one becomes "the communicator was aborted"); false if
  // the signal was already set, whose first reason stays.
  bool Set(const std::string& reason);
  bool is_set() const { return set_.load(std::memory_order_acquire); }
  // ABORTED: reason once set; OK before.
  Status status() const { return is_set() ? AbortedError(reason_) : Status::Ok(); }

 private:
  std::mutex set_mu_;  // serialises Set
  std::string reason_;
  std::atomic<bool> set_{false};
};

class CommunicatorBase : public Communicator {
 public:
  int rank() const final { return rank_; }
  int size() const final { return size_; }

  Status AllReduce(void* data, size_t count, DataType type, ReduceOp op) final;
  Status Broadcast(void* data, size_t count, DataType type, int root) final;
  Status AllGather(const void* in, size_t count, DataType type, void* out) final;
  Status Barrier() final;
  void Abort(const std::string& reason) final;
  // The typed conveniences (hidden by the overrides above otherwise).
  using Communicator::AllGather;
  using Communicator::AllReduce;
  using Communicator::Broadcast;

 protected:
  CommunicatorBase(int rank, int size) : rank_(rank), size_(size) {}

  // The backend's operations, called with checked arguments on a communicator that is
  // neither aborted nor broken: type is known, pointers are non-null when count > 0,
  // count * DataTypeSize(type) (times size() for AllGather's out) fits in size_t, root
  // is a rank, and op is kSum or (floating-point types only) kMean. A failure they
  // return breaks the communicator.
  virtual Status DoAllReduce(void* data, size_t count, DataType type, ReduceOp op) = 0;
  virtual Status DoBroadcast(void* data, size_t count, DataType type, int root) = 0;
  virtual Status DoAllGather(const void* in, size_t count, DataType type, void* out) = 0;
  virtual Status DoBarrier() = 0;
  // Once, on the thread calling Abort(), after aborted() became true: wake the
  // in-flight operation and tell peers. Must not block for long.
  virtual void OnAbort() {}
  // Once, on the thread running operations, when an operation's failure breaks the
  // communicator (`first` is what every later call returns).
  virtual void OnBroken(const Status& first) {}

  bool aborted() const { return abort_.is_set(); }
  Status AbortStatus() const { return abort_.status(); }
  const AbortSignal* abort_signal() const { return &abort_; }

 private:
  // ABORTED once aborted, else the broken status (OK while usable).
  Status Usable() const;
  // What an operation that returned `status` returns; breaks the communicator on failure.
  Status Finish(const Status& status);

  const int rank_;
  const int size_;
  AbortSignal abort_;
  Status broken_;  // only the thread running operations touches it
};

}  // namespace ringtrain::collective
