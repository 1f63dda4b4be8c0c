// RING for ranks on one host: collectives through one POSIX shared-memory segment
// (shm_segment.h), synchronised by per-rank event counters (shm_group.h).
//
// Every rank owns a slot of kBuffers buffers in the segment that only it writes; peers
// read it. A collective moves the caller's data through the slots in chunks, the
// buffers alternating, so a rank can fill the next chunk while peers still read the
// last one. Before a rank overwrites a buffer it waits until every peer has published
// the event that follows its last read of that buffer (the "release" events below).
//
// AllReduce of a large vector, per chunk (n ranks, part p of the chunk owned by rank p):
//   1. copy-in: rank r copies the parts it does not own into its buffer; event.
//   2. reduce: rank r sums part r over all ranks (its own part straight from the
//      caller's buffer) in the one order of additions (sum_order.h: the TCP ring's, so
//      both transports give the same bits), divides for a mean, and writes the result
//      both to the caller's buffer and to its own part of its slot buffer; event.
//   3. copy-out: rank r copies every other part's result from its owner's slot.
// Step 1 of the next chunk runs before step 3 of this one, overlapping peers' step 2.
// Small vectors take one step: every rank publishes its whole vector and sums all of
// them itself, in that same order. Both give bit-identical results on every rank, and
// the bits of the TCP ring for the same vectors. (The parts and chunks here are not the
// ring's segments: a part spanning a segment boundary is summed in two runs.) Sums go
// through the one reduction routine (reduce.h) for every data type; sizes, slots and
// parts are in bytes (parts whole cache lines), so float32 chunks are what they were.
//
// A Broadcast root does not wait for the others to read: like a sender on a socket it
// may learn of a failure (or of ranks issuing another collective) at its next call.
//
// Threading: one thread at a time runs collectives; Abort() may be called from any
// thread, but not concurrently with the destructor. Operations allocate nothing.
// Failures: the base (communicator_base.h) holds the abort signal and the sticky broken
// status; the Group shares a failure with the other processes.
#pragma once

#include <memory>
#include <vector>

#include "collective/communicator_base.h"
#include "collective/shm/shm_group.h"

namespace ringtrain::collective {

class ShmCommunicator : public CommunicatorBase {
 public:
  // Collective: every rank of `size` (at most shm::kMaxRanks) calls it. Rank 0 creates
  // the segment (slot buffers of options.chunk_bytes) and publishes its name in `store`
  // under "shm/name". Blocks until every rank has mapped it or options.timeout passes.
  static StatusOr<std::unique_ptr<Communicator>> Create(const CommunicatorOptions& options, int rank, int size,
                                                        store::Store* store);

  // Unmaps the segment; peers still waiting on this rank fail with UNAVAILABLE. Never blocks.
  ~ShmCommunicator() override = default;

  const char* backend_name() const override { return "RING"; }

 protected:
  Status DoAllReduce(void* data, size_t count, DataType type, ReduceOp op) override;
  Status DoBroadcast(void* data, size_t count, DataType type, int root) override;
  Status DoAllGather(const void* in, size_t count, DataType type, void* out) override;
  Status DoBarrier() override;
  void OnAbort() override { group_.ShareAbort(); }
  // Shares the failure with the other processes (a no-op when it came from them). What
  // Fail returns is for a collective to return; the collective that broke already has it.
  void OnBroken(const Status& first) override { static_cast<void>(group_.Fail(first)); }

 private:
  ShmCommunicator(std::unique_ptr<shm::Segment> segment, int rank, std::chrono::milliseconds timeout);

  Status SmallAllReduce(char* data, size_t count, DataType type, int divide_by);
  Status ChunkedAllReduce(char* data, size_t count, DataType type, int divide_by);
  // Before overwriting parts of this rank's buffer b: waits until every peer is done
  // reading them. `own_part`: the part this rank owns (else: the other parts; both for
  // a whole-buffer write).
  Status AwaitRelease(int b, bool parts, bool own_part);
  // Chunk k (of this collective) goes to buffer (chunks_before_op + k) % kBuffers.
  int BufferOf(uint64_t k) const { return static_cast<int>((chunks_ + k) % shm::kBuffers); }
  char* Slot(int r, int b) const { return group_.segment().slot(r, b); }

  shm::Group group_;
  const size_t slot_bytes_;  // capacity of one slot buffer
  const size_t part_bytes_;  // AllReduce: capacity of one rank's part, whole cache lines

  // Touched only by the thread running collectives.
  uint64_t chunks_ = 0;  // chunks of all earlier collectives: alternates the buffers
  // Per buffer of this rank's slot: every peer must have published this many events
  // before this rank overwrites the other ranks' parts / its own part of that buffer.
  uint64_t release_parts_[shm::kBuffers] = {};
  uint64_t release_own_[shm::kBuffers] = {};
  std::vector<const void*> sources_;  // size(): reused by every reduction, in rank order
  std::vector<const void*> ordered_;  // size(): the same sources in the order of additions
};

}  // namespace ringtrain::collective
