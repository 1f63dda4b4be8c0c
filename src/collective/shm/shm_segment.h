// The POSIX shared-memory segment behind one shared-memory communicator: its layout
// and its set-up. Rank 0 creates it under a random name and publishes the name in the
// store; the others open it; once every rank has mapped it, rank 0 unlinks the name,
// so nothing is left in /dev/shm however the processes end.
//
// Layout (every part page-aligned):
//   SegmentHeader                 magic, geometry, the shared failure record
//   RankControl[size]             per rank: event counter, current collective, identity
//   slots[size][kBuffers]         per rank, kBuffers buffers of slot_bytes each; only
//                                 rank r writes slots[r][*], any rank may read them
//
// Everything that more than one process touches concurrently is a lock-free
// std::atomic (checked by static_assert), so the protocol works across processes and
// across threads of one process alike.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "common/deadline.h"
#include "common/status.h"
#include "store/store.h"

namespace ringtrain::collective::shm {

inline constexpr int kBuffers = 2;            // slot buffers per rank: the pipeline depth
inline constexpr size_t kFailureMessageBytes = 1024;

// The first failure any rank reports, so that every other rank fails promptly with it.
struct FailureRecord {
  std::atomic<uint32_t> state;  // 0 none, 1 being written by its reporter, 2 complete
  int32_t rank;                 // the reporter
  int32_t code;                 // a ringtrain::Code
  char message[kFailureMessageBytes];  // NUL-terminated, as peers should see it
};

struct SegmentHeader {
  uint64_t magic;
  uint32_t version;
  int32_t size;
  uint64_t slot_bytes;   // bytes per slot buffer, a multiple of the page size
  uint64_t total_bytes;  // the whole segment
  alignas(64) FailureRecord failure;
};

// One per rank, 128-byte aligned so that no two ranks share a cache line (nor an
// adjacent-line prefetch pair). The first line is the hot one: peers poll `seq` and read
// the collective descriptor next to it in the same miss.
struct alignas(128) RankControl {
  // Events this rank has published; peers wait for it to reach a value. Sleepers
  // FUTEX_WAIT on its low 32 bits (little-endian), which change with every event.
  std::atomic<uint64_t> seq;
  std::atomic<uint32_t> waiters;   // peers in (or about to enter) FUTEX_WAIT on seq
  std::atomic<uint32_t> departed;  // 1 once this rank's communicator was destroyed
  // The collective this rank runs, as a seqlock: op_index is kOpWriting while the
  // other two change. Lets peers detect ranks that issue different collectives.
  std::atomic<uint64_t> op_index;
  std::atomic<uint64_t> op_start_seq;  // seq when that collective began
  std::atomic<uint64_t> op_packed;     // kind, type, root/op and count (see shm_group.cc)

  // Written once, when the rank attaches; read by peers to check that it is alive.
  alignas(64) std::atomic<uint32_t> attached;
  int32_t pid;
  uint64_t pid_namespace;  // inode of /proc/self/ns/pid: pids compare only within one
  uint64_t start_time;     // field 22 of /proc/<pid>/stat, to tell a reused pid apart
};

inline constexpr uint64_t kOpWriting = ~uint64_t{0};

static_assert(std::atomic<uint64_t>::is_always_lock_free && std::atomic<uint32_t>::is_always_lock_free,
              "the shared-memory protocol needs lock-free atomics");

// A mapped segment. Owns the mapping; the destructor unmaps it (and, on rank 0 if set-up
// never finished, unlinks the name). Never throws, never blocks.
class Segment {
 public:
  // Collective over `size` ranks: rank 0 creates a segment with slot buffers of about
  // `slot_bytes` (rounded up to whole pages) and publishes its name under "shm/name";
  // every rank maps it and records its identity; returns once every rank has attached,
  // or fails at `deadline` naming the ranks that did not.
  static StatusOr<std::unique_ptr<Segment>> Join(int rank, int size, size_t slot_bytes, store::Store* store,
                                                 Deadline deadline);
  ~Segment();
  Segment(const Segment&) = delete;
  Segment& operator=(const Segment&) = delete;

  int size() const { return size_; }
  size_t slot_bytes() const { return slot_bytes_; }
  SegmentHeader* header() const { return static_cast<SegmentHeader*>(base_); }
  RankControl* control(int rank) const { return controls_ + rank; }
  // Buffer `b` of rank `rank`'s slot.
  char* slot(int rank, int b) const { return slots_ + (static_cast<size_t>(rank) * kBuffers + b) * slot_bytes_; }

 private:
  Segment(void* base, size_t bytes, int size);
  void Locate();

  void* base_;
  size_t bytes_;
  int size_;
  size_t slot_bytes_ = 0;
  RankControl* controls_ = nullptr;
  char* slots_ = nullptr;
  std::string name_to_unlink_;  // rank 0 until every rank has attached
};

// This process's identity as recorded in RankControl.
struct ProcessIdentity {
  int32_t pid = 0;
  uint64_t pid_namespace = 0;
  uint64_t start_time = 0;
};
ProcessIdentity SelfIdentity();
// "" while the process recorded in `control` is alive (or cannot be checked from here,
// e.g. in another pid namespace); otherwise why it is not, e.g. "exited".
std::string ExitReason(const RankControl& control, const ProcessIdentity& self);

}  // namespace ringtrain::collective::shm
