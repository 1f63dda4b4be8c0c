#include "collective/shm/shm_group.h"

#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstring>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace ringtrain::collective::shm {
namespace {

using Clock = Deadline::Clock;
using std::chrono::microseconds;
using std::chrono::milliseconds;

// Waiting spins for an adaptive budget, then sleeps in futex slices. A peer running on
// another core answers within microseconds, so spinning pays; a peer waiting for a core
// (more ranks than cores, or a busy host) needs ours, so spinning only delays it. The
// budget doubles after a wait that spinning ended and halves after one that slept.
constexpr microseconds kMinSpin{2};
constexpr microseconds kMaxSpin{50};
constexpr milliseconds kSleepSlice{20};       // bounds how late a missed wake-up is noticed
constexpr milliseconds kLivenessEvery{100};   // kill(2) + /proc read; not on the fast path

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// The futex word is the low half of the 64-bit event counter (little-endian hosts).
uint32_t* FutexWord(std::atomic<uint64_t>* seq) {
  static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the futex word is the counter's low half");
  return reinterpret_cast<uint32_t*>(seq);
}

// Not FUTEX_PRIVATE_FLAG: the word is shared between processes.
void FutexWake(std::atomic<uint64_t>* seq) {
  ::syscall(SYS_futex, FutexWord(seq), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

void FutexWait(std::atomic<uint64_t>* seq, uint32_t expected, Clock::duration timeout) {
  auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(timeout).count();
  if (ns <= 0) return;
  timespec ts{static_cast<time_t>(ns / 1000000000), static_cast<long>(ns % 1000000000)};
  ::syscall(SYS_futex, FutexWord(seq), FUTEX_WAIT, expected, &ts, nullptr, 0);
}

// kind in bits 60..63, type in bits 56..59, arg in bits 44..55, count in bits 0..43.
uint64_t Pack(const OpDesc& d) {
  return (static_cast<uint64_t>(d.kind) << 60) | (static_cast<uint64_t>(d.type) & 0xf) << 56 |
         (static_cast<uint64_t>(d.arg & 0xfff) << 44) | (d.count & ((uint64_t{1} << 44) - 1));
}

OpDesc Unpack(uint64_t p) {
  OpDesc d;
  d.kind = static_cast<OpKind>(p >> 60);
  d.type = static_cast<DataType>((p >> 56) & 0xf);
  d.arg = static_cast<uint32_t>((p >> 44) & 0xfff);
  d.count = p & ((uint64_t{1} << 44) - 1);
  return d;
}

std::string DescribeOp(const OpDesc& d) {
  const std::string data = "count=" + std::to_string(d.count) + ", " +
                           (IsKnownDataType(d.type) ? DataTypeName(d.type)
                                                    : "data type " + std::to_string(static_cast<int>(d.type)));
  switch (d.kind) {
    case OpKind::kAllReduce: return "AllReduce(" + data + (d.arg ? ", mean)" : ", sum)");
    case OpKind::kBroadcast: return "Broadcast(" + data + ", root=" + std::to_string(d.arg) + ")";
    case OpKind::kAllGather: return "AllGather(" + data + ")";
    case OpKind::kBarrier: return "Barrier()";
  }
  return "an unknown collective";
}

}  // namespace

Group::Group(std::unique_ptr<Segment> segment, int rank, milliseconds timeout, const AbortSignal* abort)
    : segment_(std::move(segment)),
      rank_(rank),
      size_(segment_->size()),
      timeout_(timeout),
      self_(SelfIdentity()),
      abort_(abort),
      checked_(static_cast<size_t>(size_), 0) {
  // More ranks than this process may use CPUs: start by sleeping early.
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  const int usable = ::sched_getaffinity(0, sizeof(cpus), &cpus) == 0 ? CPU_COUNT(&cpus) : 1;
  spin_budget_ = size_ > usable ? Clock::duration(kMinSpin) : Clock::duration(kMaxSpin);
}

Group::~Group() {
  RankControl* me = segment_->control(rank_);
  me->departed.store(1);
  FutexWake(&me->seq);
}

std::string Group::PeerName(int q) const {
  return "rank " + std::to_string(q) + " (pid " + std::to_string(segment_->control(q)->pid) + ")";
}

std::string Group::Describe() const { return DescribeOp(desc_) + " (collective #" + std::to_string(op_index_) + ")"; }

Status Group::Begin(const OpDesc& desc, uint64_t events) {
  if (abort_->is_set()) return abort_->status();
  Status shared = SharedFailure();
  if (!shared.ok()) return Fail(shared);
  ++op_index_;
  desc_ = desc;
  op_start_ = seq_;
  op_end_ = seq_ + events;
  deadline_ = Deadline::After(timeout_);
  next_liveness_check_ = Clock::now() + kLivenessEvery;
  std::fill(checked_.begin(), checked_.end(), 0);
  // A seqlock write: peers that see op_index unchanged around their reads saw all three.
  RankControl* me = segment_->control(rank_);
  me->op_index.store(kOpWriting);
  me->op_start_seq.store(op_start_);
  me->op_packed.store(Pack(desc_));
  me->op_index.store(op_index_);
  return Status::Ok();
}

void Group::Publish() {
  RankControl* me = segment_->control(rank_);
  // seq_cst store then load: either a peer about to sleep sees the new value when it
  // re-reads seq, or we see its waiters increment and wake it (see Sleep).
  me->seq.store(++seq_, std::memory_order_seq_cst);
  if (me->waiters.load(std::memory_order_seq_cst) != 0) FutexWake(&me->seq);
}

Status Group::WaitAll(uint64_t target) {
  while (true) {
    int laggard = -1;
    uint64_t least = ~uint64_t{0};
    for (int q = 0; q < size_; ++q) {
      const uint64_t s = segment_->control(q)->seq.load(std::memory_order_acquire);
      if (q != rank_ && s < target && s < least) {
        least = s;
        laggard = q;
      }
    }
    if (laggard < 0) break;
    Status s = WaitSlow(laggard, target, /*all=*/true);
    if (!s.ok()) return s;
  }
  for (int q = 0; q < size_; ++q) {
    if (q == rank_ || checked_[q]) continue;
    Status s = CheckPeerCollective(q);
    if (!s.ok()) return Fail(s);
  }
  return Status::Ok();
}

Status Group::WaitSlow(int q, uint64_t target, bool all) {
  std::atomic<uint64_t>& seq = segment_->control(q)->seq;
  const Clock::time_point start = Clock::now();
  bool slept = false;
  for (bool first = true;; first = false) {
    for (int i = 0; i < 16; ++i) {
      if (seq.load(std::memory_order_acquire) >= target) {
        if (!first) AdaptSpin(slept);
        Status s = CheckPeerCollective(q);
        return s.ok() ? s : Fail(s);
      }
      CpuRelax();
    }
    const Clock::time_point now = Clock::now();
    Status s = CheckInterrupts(q, target, all, now);
    if (!s.ok()) return Fail(s);
    const auto waited = now - start;
    if (waited < spin_budget_) continue;
    Sleep(q, target, now);
    slept = true;
  }
}

void Group::AdaptSpin(bool slept) {
  spin_budget_ = slept ? std::max<Clock::duration>(kMinSpin, spin_budget_ / 2)
                       : std::min<Clock::duration>(kMaxSpin, spin_budget_ * 2);
}

void Group::Sleep(int q, uint64_t target, Clock::time_point now) {
  RankControl* c = segment_->control(q);
  c->waiters.fetch_add(1, std::memory_order_seq_cst);
  const uint64_t s = c->seq.load(std::memory_order_seq_cst);
  if (s < target && !abort_->is_set() && segment_->header()->failure.state.load() == 0) {
    auto slice = std::min<Clock::duration>(kSleepSlice, deadline_.when() - now);
    FutexWait(&c->seq, static_cast<uint32_t>(s), slice);
  }
  c->waiters.fetch_sub(1, std::memory_order_seq_cst);
}

Status Group::CheckInterrupts(int q, uint64_t target, bool all, Clock::time_point now) {
  if (abort_->is_set()) return abort_->status();
  Status shared = SharedFailure();
  if (!shared.ok()) return shared;
  const RankControl* c = segment_->control(q);
  if (c->departed.load() != 0) {
    return UnavailableError(PeerName(q) + " closed its communicator before finishing " + Describe() +
                            "; every rank must run the same collectives before closing");
  }
  if (now >= next_liveness_check_) {
    next_liveness_check_ = now + kLivenessEvery;
    std::string why = ExitReason(*c, self_);
    if (!why.empty()) {
      return UnavailableError(PeerName(q) + " " + why + " during " + Describe() +
                              "; the job must restart from its last checkpoint");
    }
  }
  if (now < deadline_.when()) return Status::Ok();
  // Name every rank that has not got there, and how far each got.
  std::string who;
  for (int p = 0; p < size_; ++p) {
    if (p == rank_ || (!all && p != q)) continue;
    const RankControl* pc = segment_->control(p);
    const uint64_t s = pc->seq.load();
    if (s >= target) continue;
    const uint64_t idx = pc->op_index.load();
    if (!who.empty()) who += "; ";
    who += PeerName(p);
    if (idx == 0) {
      who += " has not started any collective";
    } else if (idx != kOpWriting && idx < op_index_) {
      who += " has not started it (it is still in collective #" + std::to_string(idx) + ")";
    } else {
      who += " has done " + std::to_string(s > op_start_ ? s - op_start_ : 0) + " of its " +
             std::to_string(op_end_ - op_start_) + " steps";
    }
  }
  if (who.empty()) who = PeerName(q) + " has not arrived";
  return DeadlineExceededError(Describe() + " did not finish within " + std::to_string(timeout_.count()) +
                               " ms: " + who +
                               ". A rank may be stopped, hung or much slower, or issuing different collectives");
}

Status Group::CheckPeerCollective(int q) {
  if (checked_[q]) return Status::Ok();
  const RankControl* c = segment_->control(q);
  const uint64_t seq = c->seq.load();  // before op_index: see the "behind" case below
  const uint64_t idx = c->op_index.load();
  const uint64_t start = c->op_start_seq.load();
  const uint64_t packed = c->op_packed.load();
  if (idx == kOpWriting || c->op_index.load() != idx) return Status::Ok();  // moving on; check later
  std::string theirs;
  if (idx < op_index_) {
    // Still in an earlier collective: fine (e.g. still reading our last chunk), unless
    // it already published events of ours, which a matching collective cannot do.
    if (seq <= op_start_) return Status::Ok();  // not checked yet: the next wait checks again
    theirs = "is still in collective #" + std::to_string(idx) + " but took more steps (it must have been different)";
  } else if (idx == op_index_ && (start != op_start_ || packed != Pack(desc_))) {
    theirs = "issued " + DescribeOp(Unpack(packed)) + " as collective #" + std::to_string(idx);
  } else if (idx > op_index_ && start < op_end_) {
    theirs = "finished collective #" + std::to_string(op_index_) + " in fewer steps (it must have been different)";
  }
  checked_[q] = 1;
  if (theirs.empty()) return Status::Ok();
  return FailedPreconditionError("collective mismatch: " + PeerName(q) + " " + theirs + ", but rank " +
                                 std::to_string(rank_) + " issued " + Describe() +
                                 "; every rank must issue the same collectives with the same sizes in the same "
                                 "order");
}

Status Group::SharedFailure() const {
  const FailureRecord& f = segment_->header()->failure;
  if (f.state.load(std::memory_order_acquire) != 2) return Status::Ok();  // 1: complete soon; seen next check
  return Status(static_cast<Code>(f.code), std::string(f.message, strnlen(f.message, sizeof(f.message))));
}

void Group::ShareFailure(Code code, const std::string& message) {
  FailureRecord& f = segment_->header()->failure;
  uint32_t expected = 0;
  if (!f.state.compare_exchange_strong(expected, 1)) return;  // someone reported first
  f.rank = rank_;
  f.code = static_cast<int32_t>(code);
  const size_t n = std::min(message.size(), sizeof(f.message) - 1);
  std::memcpy(f.message, message.data(), n);
  f.message[n] = '\0';
  f.state.store(2, std::memory_order_release);
  WakeAll();
}

void Group::WakeAll() {
  for (int q = 0; q < size_; ++q) FutexWake(&segment_->control(q)->seq);
}

Status Group::Fail(const Status& status) {
  if (abort_->is_set()) return abort_->status();  // ShareAbort told the others
  // A failure that came from the shared record is already there; the CAS then no-ops.
  ShareFailure(status.code(), "rank " + std::to_string(rank_) + " failed: " + status.message());
  return status;
}

void Group::ShareAbort() {
  ShareFailure(Code::kAborted, "rank " + std::to_string(rank_) + " aborted the communicator: " +
                                   abort_->status().message());
  WakeAll();  // also wakes this rank's own waiter, sleeping on a peer's counter
}

}  // namespace ringtrain::collective::shm
