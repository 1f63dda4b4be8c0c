// The one order of additions of every RING all-reduce, whatever carries it: TCP between
// any hosts, shared memory on one host, or a mix of placements (which today runs TCP
// for every rank; factory.cc). A job's model bytes therefore depend on the job, the
// seed and the worker count only, never on where the workers run.
//
// The definition, for an all-reduce of `count` elements of `type` over n ranks, x_r
// being rank r's vector:
//   - small: when count * DataTypeSize(type) <= SmallAllReduceBytes(n), every element
//     is summed in rank order: ((x_0 + x_1) + x_2) + ... + x_{n-1}.
//   - large: otherwise the vector is cut into n segments, segment s holding
//     count / n elements plus one more for the first count % n segments, and element i
//     of segment s is summed in ring order starting at rank s:
//       ((x_s + x_{s+1}) + x_{s+2}) + ... + x_{s+n-1}     (ranks mod n)
//     That is the TCP ring's reduce-scatter (ring/ring_communicator.cc): segment s starts on
//     rank s and collects ranks s+1, s+2, ... as it travels around the ring.
//   - kMean divides the finished sum by n, once (floating-point types only).
// IEEE-754 addition is commutative (a + b and b + a are the same bits), so only the
// association above matters; each addition rounds to the element type (reduce.cc is
// compiled without FMA contraction or excess precision). Integer sums wrap modulo
// 2^bits, where the order cannot change the result.
//
// The order is a pure function of (n, count, type, element index). It does not depend
// on the transport, on chunk sizes (RINGTRAIN_CHUNK_BYTES pipelines the ring and sizes
// the shared-memory slots, but a chunk only splits the same element-wise additions), on
// timing, on the hosts, or on how many ranks one process hosts: an implementation that
// hosts several virtual ranks must add them in this order too.
//
// Which backend follows it: the TCP ring computes it by construction; shared memory
// (shm/shm_communicator.cc) has every rank's data and adds each element's sources in this
// order with ReduceRangeInSumOrder; the one-rank communicator copies. NCCL's order is
// its own (it picks rings and trees by topology and version): NCCL results are
// deterministic for one cluster shape, but not the bits of RING.
//
// Threading: pure functions and an immutable value type; any thread.
#pragma once

#include <cstddef>

#include "collective/data_type.h"

namespace ringtrain::collective {

// The small/large switch of the definition above, in bytes; depends on n only.
// (Chosen for the TCP ring's speed: see ring/ring_communicator.cc.)
size_t SmallAllReduceBytes(int n);

// Where each element's sum starts, for one all-reduce.
class SumOrder {
 public:
  // n >= 1; type must be known.
  SumOrder(int n, size_t count, DataType type);

  int ranks() const { return n_; }
  size_t count() const { return count_; }
  // True when the whole vector is summed in rank order (the "small" case; always for n = 1).
  bool rank_order() const { return segments_ == 1; }
  // 1 (small) or n (large).
  int segments() const { return segments_; }
  // Segment s is elements [SegmentBegin(s), SegmentBegin(s + 1)); 0 <= s <= segments().
  size_t SegmentBegin(int s) const;
  // The segment holding element i < count().
  int SegmentOf(size_t i) const;
  // The rank whose value starts element i's sum; the others follow in ring order.
  int FirstRank(size_t i) const { return rank_order() ? 0 : SegmentOf(i); }

 private:
  int n_;
  size_t count_;
  int segments_;
  size_t base_;   // elements per segment, before the extras
  size_t extra_;  // the first `extra_` segments hold one more
};

namespace internal {

// Sums elements [lo, hi) of an all-reduce in `order`, through ReduceInOrder (reduce.h).
// by_rank[q] points at rank q's element lo; out (and also_out unless null) at where
// element lo's result goes. One by_rank entry may be out itself (in place); otherwise
// nothing overlaps. divide_by as ReduceInOrder's. scratch: order.ranks() pointers this
// call may overwrite (so that it allocates nothing). hi <= order.count().
void ReduceRangeInSumOrder(const SumOrder& order, DataType type, const void* const* by_rank, size_t lo, size_t hi,
                           int divide_by, void* out, void* also_out, const void** scratch);

}  // namespace internal
}  // namespace ringtrain::collective
