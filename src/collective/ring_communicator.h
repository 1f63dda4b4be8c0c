// The RING backend: collectives over one TCP connection to the next rank and one from
// the previous rank, as in Gloo's ring algorithms and NCCL's ring.
//
// AllReduce is reduce-scatter then all-gather over n segments; each step sends one
// segment to the next rank straight from the caller's buffer while receiving another
// from the previous rank, in chunks of chunk_bytes, reducing each received chunk as it
// lands (full duplex, one poll loop). Every rank reduces a given segment in the same
// fixed ring order and the all-gather copies the owner's bits, so results are
// bit-identical on all ranks and across runs.
//
// Each operation first exchanges a small header (op, count, root, sequence number)
// with its neighbours so that ranks issuing different collectives fail with
// FAILED_PRECONDITION instead of exchanging garbage.
//
// Threading: one thread at a time runs operations; Abort() may be called from any
// thread, but not concurrently with the destructor. After any failure the communicator
// is broken: it shuts its connections down (so neighbours fail promptly rather than
// time out) and every later operation returns the same error at once.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "collective/communicator.h"
#include "collective/socket.h"
#include "common/deadline.h"

namespace ringtrain {

class RingCommunicator : public Communicator {
 public:
  // Listens on options.listen_host, publishes "host:port" in `store` under
  // "ring/addr/<rank>", connects to the next rank and accepts the previous one.
  // Blocks until the ring is connected or options.timeout passes. Requires size >= 2.
  static StatusOr<std::unique_ptr<Communicator>> Create(const CommunicatorOptions& options, int rank, int size,
                                                        Store* store);

  ~RingCommunicator() override;  // closes both connections; never blocks

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  const char* backend_name() const override { return "RING"; }

  Status AllReduce(float* data, size_t count, ReduceOp op) override;
  Status Broadcast(float* data, size_t count, int root) override;
  Status AllGather(const float* in, size_t count, float* out) override;
  Status Barrier() override;
  // Sets the abort flag, wakes the in-flight operation and shuts both connections
  // down, so neighbours fail promptly too instead of waiting for their timeout.
  void Abort(const std::string& reason) override;

 private:
  // One neighbour connection. `name` is "rank 2 (host:port)" for error messages.
  struct Peer {
    Fd fd;
    int rank = -1;
    std::string name;
  };

  enum class OpKind : uint32_t { kAllReduce = 1, kBroadcast = 2, kAllGather = 3, kBarrier = 4 };

  // One ring step: send send_len bytes to next while receiving recv_len bytes from prev.
  struct Step {
    const char* send = nullptr;
    size_t send_len = 0;
    char* recv = nullptr;
    size_t recv_len = 0;
    bool reduce = false;   // receive into scratch_, then add chunk by chunk into (float*)recv
    bool forward = false;  // send only bytes already received (recv == send; broadcast relay)
  };

  RingCommunicator(int rank, int size, const CommunicatorOptions& options, Peer next, Peer prev, Fd abort_fd);

  // Checks abort/broken state and exchanges the operation header with both neighbours.
  Status BeginOp(OpKind kind, uint64_t count, uint32_t root, Deadline deadline);
  Status RunStep(const Step& step, OpKind kind, Deadline deadline);
  // Sum (then mean) reduce-scatter + all-gather over the ring; no header.
  Status RingAllReduce(float* data, size_t count, ReduceOp op, OpKind kind, Deadline deadline);
  // Records a failure so later operations return it; prefers ABORTED once aborted.
  Status Fail(const Status& status);
  Status AbortStatus() const;
  Status PeerError(const Peer& peer, OpKind kind, const std::string& what, size_t done, size_t total) const;
  Status TimeoutError(const Peer& peer, OpKind kind, const std::string& what, size_t done, size_t total) const;
  int Mod(int x) const { return ((x % size_) + size_) % size_; }

  const int rank_;
  const int size_;
  const std::chrono::milliseconds timeout_;
  const size_t chunk_bytes_;  // a positive multiple of sizeof(float)
  Peer next_;                 // we send to it
  Peer prev_;                 // we receive from it
  Fd abort_fd_;               // eventfd; readable once Abort() was called

  std::atomic<bool> aborted_{false};
  mutable std::mutex abort_mu_;
  std::string abort_reason_;  // guarded by abort_mu_; set once, before aborted_

  // Touched only by the thread running operations.
  Status broken_;
  uint64_t next_seq_ = 0;
  std::vector<float> scratch_;  // chunk_bytes_ bytes: one received chunk awaiting reduction
};

}  // namespace ringtrain
