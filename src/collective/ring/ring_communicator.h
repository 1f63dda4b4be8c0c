// The RING backend: collectives over one TCP connection to the next rank and one from
// the previous rank, as in Gloo's ring algorithms and NCCL's ring.
//
// Every operation is one transfer: a stream of pieces sent to the next rank and a
// stream received from the previous rank, progressed together in one non-blocking
// loop (full duplex; poll(2) only when neither socket moves). A piece that forwards
// data received in this operation is gated on how much of it has arrived (or been
// reduced), so ring steps overlap chunk by chunk with no pause between steps.
//
// AllReduce picks its algorithm by size:
//  - small (<= SmallAllReduceBytes(n)): ring all-gather of the whole vectors (n-1
//    hops, one message each), then every rank sums the n vectors locally in rank
//    order 0..n-1. Latency-optimal on a ring: for 2 ranks, one exchange.
//  - large: reduce-scatter then all-gather over n segments, in chunks of chunk_bytes;
//    segment s accumulates ranks s, s+1, ... in ring order, received chunks are added
//    straight from a cache-sized scratch chunk into the caller's buffer, and the
//    all-gather receives straight into the caller's buffer.
// Barrier is a ring all-gather of one token per rank (n-1 hops); Broadcast a chain
// from the root that relays each piece as it lands; AllGather the ring all-gather.
// Either way every rank adds in the same fixed order and the all-gather copies the
// owner's bits, so results are bit-identical on all ranks and across runs with the
// same size and rank count (the choice depends only on those, not on chunk_bytes).
// These two orders are the one order of every RING all-reduce (sum_order.h), which
// shared memory follows too.
//
// Every type moves as bytes; only the reductions look at the type (reduce.h), and
// sizes, the small/large threshold and chunks are in bytes. A chunk is chunk_bytes
// rounded down to a whole number of elements, so float32 chunks are what they always were.
//
// Each operation's stream starts with a 24-byte header (op, data type, reduction, count,
// root, sequence number), sent in the same system call as the first data, so ranks
// issuing different collectives (or the same with another type) fail with
// FAILED_PRECONDITION naming both, instead of exchanging garbage, without an extra round
// trip. (After a failed operation the buffers' contents are unspecified.)
//
// Threading: one thread at a time runs operations; Abort() may be called from any
// thread, but not concurrently with the destructor. After any failure the communicator
// is broken (CommunicatorBase): it shuts its connections down (so neighbours fail
// promptly rather than time out) and every later operation returns the same error at once.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "collective/communicator_base.h"
#include "collective/ring/socket.h"
#include "common/deadline.h"

namespace ringtrain::collective {

class RingCommunicator : public CommunicatorBase {
 public:
  // AllReduce of at most this many bytes uses the all-gather-and-sum algorithm on a
  // ring of `size` ranks: collective::SmallAllReduceBytes (sum_order.h), part of the
  // one order of additions. Depends only on the size, so every rank agrees.
  static size_t SmallAllReduceBytes(int size);

  // Listens on options.listen_host, publishes "host:port" in `store` under
  // "ring/addr/<rank>", connects to the next rank and accepts the previous one.
  // Blocks until the ring is connected or options.timeout passes. Requires size >= 2.
  static StatusOr<std::unique_ptr<Communicator>> Create(const CommunicatorOptions& options, int rank, int size,
                                                        store::Store* store);

  ~RingCommunicator() override;  // closes both connections; never blocks

  const char* backend_name() const override { return "RING"; }

 protected:
  Status DoAllReduce(void* data, size_t count, DataType type, ReduceOp op) override;
  Status DoBroadcast(void* data, size_t count, DataType type, int root) override;
  Status DoAllGather(const void* in, size_t count, DataType type, void* out) override;
  Status DoBarrier() override;
  // Wakes the in-flight operation and shuts both connections down, so neighbours fail
  // promptly too instead of waiting for their timeout.
  void OnAbort() override;
  // Shuts both connections down: the ring is unusable, and the neighbours' in-flight
  // operations fail at once (and theirs, theirs) instead of each waiting out its timeout.
  void OnBroken(const Status& first) override;

 private:
  // One neighbour connection. `name` is "rank 2 (host:port)" for error messages.
  struct Peer {
    Fd fd;
    int rank = -1;
    std::string name;
  };

  enum class OpKind : uint32_t { kAllReduce = 1, kBroadcast = 2, kAllGather = 3, kBarrier = 4 };

  // Bytes to send to next_, in stream order. A gated piece forwards what recv piece
  // `gate` has delivered so far (received, or for a reduce piece reduced).
  struct SendPiece {
    const char* data = nullptr;
    size_t len = 0;
    int gate = -1;
  };
  // Bytes to receive from prev_, in stream order. A reduce piece adds the incoming
  // elements into data (then divides by `divide_by` if it is not 0), one scratch chunk
  // at a time.
  struct RecvPiece {
    char* data = nullptr;
    size_t len = 0;
    bool reduce = false;
    int divide_by = 0;
  };

  RingCommunicator(int rank, int size, const CommunicatorOptions& options, Peer next, Peer prev, Fd abort_fd);

  // Starts an operation on elements of `type`: its header, its chunk size, and the
  // piece lists reset to the header pieces.
  void BeginOp(OpKind kind, DataType type, ReduceOp op, uint64_t count, uint32_t root);
  // Runs the operation's pieces to completion (the base breaks the communicator on failure).
  Status Transfer(OpKind kind, Deadline deadline);
  // Appends ring all-gather pieces: blocks[r] (len bytes each) is rank r's block; our
  // own is sent, the others are received and forwarded around the ring.
  void AddRingAllGather(char* const* blocks, size_t len);
  Status SmallAllReduce(char* data, size_t count, ReduceOp op, Deadline deadline);
  Status LargeAllReduce(char* data, size_t count, ReduceOp op, Deadline deadline);
  Status CheckHeader();
  Status PeerError(const Peer& peer, OpKind kind, const std::string& what, size_t done, size_t total) const;
  Status TimeoutError(const Peer& peer, OpKind kind, const std::string& what, size_t done, size_t total) const;
  int Mod(int x) const { return ((x % size()) + size()) % size(); }

  const std::chrono::milliseconds timeout_;
  const size_t chunk_option_;  // CommunicatorOptions::chunk_bytes
  // Most bytes one sendmsg/recvmsg moves: max(float32 chunk, 64 KiB). Measured: bounding
  // each call keeps both ranks' loops alternating, so receive-window updates and
  // forwarded chunks flow while the other side copies; unbounded calls (a whole
  // segment at once) serialised the two directions and cost 10-20% at 64 MiB.
  const size_t io_bytes_;
  Peer next_;                 // we send to it
  Peer prev_;                 // we receive from it
  Fd abort_fd_;               // eventfd; readable once Abort() was called

  // Touched only by the thread running operations.
  uint64_t next_seq_ = 0;
  DataType type_ = DataType::kFloat32;  // the current operation's elements
  size_t chunk_bytes_ = 0;  // the current operation's chunk: whole elements, > 0
  std::vector<uint64_t> scratch_;  // one received chunk awaiting reduction (8-byte aligned)
  std::vector<uint64_t> gather_;   // small AllReduce: the other ranks' vectors; Barrier: tokens
  std::vector<char*> blocks_;   // ring all-gather: where each rank's block lives
  // The current operation: its header, the peer's, and its pieces (reused, so that
  // small operations do not allocate).
  uint64_t header_[3] = {};
  uint64_t peer_header_[3] = {};
  std::vector<SendPiece> send_;
  std::vector<RecvPiece> recv_;
  std::vector<size_t> recv_done_;  // per recv piece: bytes that gated sends may forward
};

}  // namespace ringtrain::collective
