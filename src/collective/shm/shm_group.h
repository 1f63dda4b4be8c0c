// The synchronisation layer of the shared-memory communicator: events, waiting,
// failure sharing and collective-mismatch checks, on top of a mapped Segment. The
// algorithms (shm_communicator.cc) only publish events and wait for peers' events.
//
// Events: every rank publishes the same sequence of events (its RankControl::seq counts
// them), because every rank runs the same collectives with the same sizes; "rank q has
// published e events" is therefore a point in the protocol all ranks agree on.
//
// Waiting spins briefly (a peer on another core answers within microseconds), then
// yields the CPU (ranks may outnumber cores), then sleeps in FUTEX_WAIT on the peer's
// counter; a publisher calls FUTEX_WAKE only when some peer announced it may sleep, so
// the fast path is one store and one load. While waiting it checks this rank's abort
// flag, the shared failure record, the collective's deadline, whether the peer closed
// its communicator, and (every 100 ms) whether the peer's process still exists.
//
// Failures: the first failure any rank sees is written to the segment's failure record
// (first writer wins), and every other rank fails with it at its next check, naming the
// reporter. What stays here is only that cross-process record; the abort flag and
// reason are the communicator's AbortSignal (communicator_base.h, which the Group reads
// through a pointer), and the sticky broken status is CommunicatorBase's.
//
// Threading: one thread runs collectives (Begin/Publish/Wait*/Fail); ShareAbort() runs
// on the thread that aborts the communicator, but not concurrently with the destructor.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "collective/communicator_base.h"
#include "collective/shm/shm_segment.h"
#include "common/deadline.h"
#include "common/status.h"

namespace ringtrain::collective::shm {

enum class OpKind : uint32_t { kAllReduce = 1, kBroadcast = 2, kAllGather = 3, kBarrier = 4 };

// A collective as every rank must issue it. Peers compare it packed into 64 bits:
// kind 4, type 4, arg 12 (so at most kMaxRanks ranks) and count 44 bits (16 Ti
// elements, more than one host's memory holds).
struct OpDesc {
  OpKind kind = OpKind::kBarrier;
  DataType type = DataType::kFloat32;  // Barrier: kFloat32 (it moves no data)
  uint32_t arg = 0;  // Broadcast: root; AllReduce: 0 sum, 1 mean
  uint64_t count = 0;
};
inline constexpr int kMaxRanks = 1 << 12;

class Group {
 public:
  // abort: the communicator's signal (not owned; outlives the Group).
  Group(std::unique_ptr<Segment> segment, int rank, std::chrono::milliseconds timeout, const AbortSignal* abort);
  ~Group();  // marks this rank departed and wakes sleepers; never blocks

  int rank() const { return rank_; }
  int size() const { return size_; }
  const Segment& segment() const { return *segment_; }

  // Starts a collective in which every rank publishes `events` events: fails at once if
  // the communicator was aborted or another rank reported a failure, else records `desc`
  // for peers' checks and starts the collective's deadline.
  Status Begin(const OpDesc& desc, uint64_t events);
  // Events this rank has published so far.
  uint64_t seq() const { return seq_; }
  // Publishes the next event (after this rank's writes to its slot that it covers).
  void Publish();
  // Wait until rank q / every other rank has published `target` events. Blocks until
  // then or until the collective fails (deadline, abort, peer failure or exit). WaitAll
  // sleeps on the rank furthest behind, which is likely to arrive last: one wake-up.
  Status WaitRank(int q, uint64_t target) {
    if (segment_->control(q)->seq.load(std::memory_order_acquire) >= target && checked_[q]) return Status::Ok();
    return WaitSlow(q, target, /*all=*/false);
  }
  Status WaitAll(uint64_t target);
  // Shares `status` with the other ranks (unless this rank aborted: then they learn
  // that instead) and returns what the collective should return (ABORTED once aborted).
  Status Fail(const Status& status);
  // After the communicator's AbortSignal was set: fails every other rank's in-flight and
  // later collectives with ABORTED naming this rank, and wakes this rank's own waiter.
  void ShareAbort();

 private:
  Status WaitSlow(int q, uint64_t target, bool all);
  // Abort, shared failure, deadline, departure and (rate-limited) liveness.
  Status CheckInterrupts(int q, uint64_t target, bool all, Deadline::Clock::time_point now);
  Status CheckPeerCollective(int q);
  void Sleep(int q, uint64_t target, Deadline::Clock::time_point now);
  void AdaptSpin(bool slept);
  Status SharedFailure() const;
  void ShareFailure(Code code, const std::string& message);
  void WakeAll();
  std::string Describe() const;  // "AllReduce(count=..., sum) (collective #n)"
  std::string PeerName(int q) const;

  const std::unique_ptr<Segment> segment_;
  const int rank_;
  const int size_;
  const std::chrono::milliseconds timeout_;
  const ProcessIdentity self_;
  const AbortSignal* const abort_;

  // Touched only by the thread running collectives.
  uint64_t seq_ = 0;
  uint64_t op_index_ = 0;
  uint64_t op_start_ = 0;  // seq_ when the current collective began
  uint64_t op_end_ = 0;    // seq_ when it will have ended
  OpDesc desc_;
  Deadline deadline_ = Deadline::After(std::chrono::milliseconds(0));
  Deadline::Clock::time_point next_liveness_check_{};
  Deadline::Clock::duration spin_budget_{};  // see AdaptSpin
  std::vector<uint8_t> checked_;  // per rank: its collective was checked against ours
};

}  // namespace ringtrain::collective::shm
