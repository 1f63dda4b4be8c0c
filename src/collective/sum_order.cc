// The order of additions every RING all-reduce follows (sum_order.h).
#include "collective/sum_order.h"

#include <algorithm>

#include "collective/reduce.h"

namespace ringtrain::collective {

size_t SmallAllReduceBytes(int n) {
  // Measured on loopback, 2 cores, 2-4 processes: the TCP ring's all-gather needs n-1
  // hops instead of 2(n-1) but sends n/2 times the ring's bytes and sums only after
  // everything has arrived; it is as fast or faster up to 64 KiB for 2 ranks, 32 KiB
  // for 3-4 ranks.
  if (n <= 2) return 64u << 10;
  if (n <= 4) return 32u << 10;
  return 16u << 10;
}

SumOrder::SumOrder(int n, size_t count, DataType type) : n_(n), count_(count) {
  const bool small = n <= 1 || count * DataTypeSize(type) <= SmallAllReduceBytes(n);
  segments_ = small ? 1 : n;
  base_ = count / static_cast<size_t>(segments_);
  extra_ = count % static_cast<size_t>(segments_);
}

size_t SumOrder::SegmentBegin(int s) const {
  const size_t k = static_cast<size_t>(s);
  return k * base_ + std::min(k, extra_);
}

int SumOrder::SegmentOf(size_t i) const {
  // The first extra_ segments hold base_ + 1 elements, the rest base_ (base_ > 0 in the
  // large case: count exceeds the threshold, which is far above n elements).
  const size_t long_part = extra_ * (base_ + 1);
  if (i < long_part) return static_cast<int>(i / (base_ + 1));
  if (base_ == 0) return segments_ - 1;
  return static_cast<int>(extra_ + (i - long_part) / base_);
}

namespace internal {

void ReduceRangeInSumOrder(const SumOrder& order, DataType type, const void* const* by_rank, size_t lo, size_t hi,
                           int divide_by, void* out, void* also_out, const void** scratch) {
  const int n = order.ranks();
  const size_t elem = DataTypeSize(type);
  auto at = [&](const void* p, size_t i) { return static_cast<const char*>(p) + (i - lo) * elem; };
  for (size_t a = lo; a < hi;) {
    // The run of elements from a that share a segment, hence a first rank.
    const int s = order.SegmentOf(a);
    const size_t b = std::min(hi, order.SegmentBegin(s + 1));
    const int first = order.FirstRank(a);
    for (int j = 0; j < n; ++j) scratch[j] = at(by_rank[(first + j) % n], a);
    ReduceInOrder(type, scratch, n, b - a, divide_by, const_cast<char*>(at(out, a)),
                  also_out == nullptr ? nullptr : const_cast<char*>(at(also_out, a)));
    a = b;
  }
}

}  // namespace internal
}  // namespace ringtrain::collective
