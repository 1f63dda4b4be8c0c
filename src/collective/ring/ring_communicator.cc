// RingCommunicator's operations, each laid out as the pieces of one transfer
// (ring_transfer.cc runs them).
#include "collective/ring/ring_communicator.h"

#include <algorithm>
#include <cstring>

#include "collective/reduce.h"
#include "collective/sum_order.h"

namespace ringtrain::collective {

size_t RingCommunicator::SmallAllReduceBytes(int size) { return collective::SmallAllReduceBytes(size); }

void RingCommunicator::AddRingAllGather(char* const* blocks, size_t len) {
  // Step k sends block rank-k (our own at k=0, then the one received at step k-1) and
  // receives block rank-k-1.
  const int first = static_cast<int>(recv_.size());
  for (int k = 0; k < size() - 1; ++k) {
    send_.push_back({blocks[Mod(rank() - k)], len, k == 0 ? -1 : first + k - 1});
    recv_.push_back({blocks[Mod(rank() - k - 1)], len, false, 0});
  }
}

Status RingCommunicator::SmallAllReduce(char* data, size_t count, ReduceOp op, Deadline deadline) {
  const size_t n = static_cast<size_t>(size());
  const size_t block = count * DataTypeSize(type_);
  const size_t words = ((n - 1) * block + sizeof(uint64_t) - 1) / sizeof(uint64_t);
  if (gather_.size() < words) gather_.resize(words);
  char* others = reinterpret_cast<char*>(gather_.data());
  blocks_.resize(n);
  for (int r = 0, slot = 0; r < size(); ++r) blocks_[r] = r == rank() ? data : others + block * slot++;
  AddRingAllGather(blocks_.data(), block);
  RT_RETURN_IF_ERROR(Transfer(OpKind::kAllReduce, deadline));
  // Every rank adds the n vectors in rank order 0..n-1, whatever its own position.
  internal::ReduceInOrder(type_, reinterpret_cast<const void* const*>(blocks_.data()), size(), count,
                          op == ReduceOp::kMean ? size() : 0, data, nullptr);
  return Status::Ok();
}

Status RingCommunicator::LargeAllReduce(char* data, size_t count, ReduceOp op, Deadline deadline) {
  const size_t elem = DataTypeSize(type_);
  // The segments of the one order of additions (sum_order.h): this reduce-scatter is
  // what defines it.
  const SumOrder order(size(), count, type_);
  auto bytes = [&](int i) { return (order.SegmentBegin(i + 1) - order.SegmentBegin(i)) * elem; };
  auto at = [&](int i) { return data + order.SegmentBegin(i) * elem; };
  const int first = static_cast<int>(recv_.size());
  const int divide_by = op == ReduceOp::kMean ? size() : 0;

  // Reduce-scatter: step k sends segment rank-k (our input at k=0, then the partial sum
  // reduced at step k-1, chunk by chunk) and adds segment rank-k-1 into ours. The last
  // step completes segment rank+1, which this rank owns; the mean divides it there,
  // once, so every copy is bit-identical.
  for (int k = 0; k < size() - 1; ++k) {
    int s_send = Mod(rank() - k);
    int s_recv = Mod(rank() - k - 1);
    send_.push_back({at(s_send), bytes(s_send), k == 0 ? -1 : first + k - 1});
    recv_.push_back({at(s_recv), bytes(s_recv), true, k == size() - 2 ? divide_by : 0});
  }
  // All-gather: step k sends segment rank+1-k (the owned one as it completes, then the
  // one received at step k-1) and receives segment rank-k straight into place.
  for (int k = 0; k < size() - 1; ++k) {
    int s_send = Mod(rank() + 1 - k);
    int s_recv = Mod(rank() - k);
    send_.push_back({at(s_send), bytes(s_send), first + size() - 2 + k});
    recv_.push_back({at(s_recv), bytes(s_recv), false, 0});
  }
  return Transfer(OpKind::kAllReduce, deadline);
}

Status RingCommunicator::DoAllReduce(void* data, size_t count, DataType type, ReduceOp op) {
  Deadline deadline = Deadline::After(timeout_);
  BeginOp(OpKind::kAllReduce, type, op, count, 0);
  char* bytes = static_cast<char*>(data);
  if (SumOrder(size(), count, type).rank_order()) return SmallAllReduce(bytes, count, op, deadline);
  return LargeAllReduce(bytes, count, op, deadline);
}

Status RingCommunicator::DoBarrier() {
  Deadline deadline = Deadline::After(timeout_);
  BeginOp(OpKind::kBarrier, DataType::kFloat32, ReduceOp::kSum, 0, 0);
  // Every rank's token travels n-1 hops around the ring, so no rank can leave before
  // it has heard (directly or relayed) from every other rank.
  constexpr size_t kToken = sizeof(uint32_t);
  const size_t n = static_cast<size_t>(size());
  if (gather_.size() * sizeof(uint64_t) < n * kToken) gather_.resize((n * kToken + 7) / 8);
  char* tokens = reinterpret_cast<char*>(gather_.data());
  blocks_.resize(n);
  for (int r = 0; r < size(); ++r) blocks_[r] = tokens + static_cast<size_t>(r) * kToken;
  const uint32_t me = static_cast<uint32_t>(rank());
  std::memcpy(blocks_[rank()], &me, kToken);
  AddRingAllGather(blocks_.data(), kToken);
  return Transfer(OpKind::kBarrier, deadline);
}

Status RingCommunicator::DoBroadcast(void* data, size_t count, DataType type, int root) {
  Deadline deadline = Deadline::After(timeout_);
  BeginOp(OpKind::kBroadcast, type, ReduceOp::kSum, count, static_cast<uint32_t>(root));
  // A chain root -> root+1 -> ... -> root-1; middle ranks relay each piece as it lands.
  // Only the header travels from root-1 back to root, so the root too checks that its
  // neighbour issued the same operation.
  const int position = Mod(rank() - root);
  const size_t len = count * DataTypeSize(type);
  char* bytes = static_cast<char*>(data);
  if (position != 0) recv_.push_back({bytes, len, false, 0});
  if (position != size() - 1) send_.push_back({bytes, len, position == 0 ? -1 : 1});
  return Transfer(OpKind::kBroadcast, deadline);
}

Status RingCommunicator::DoAllGather(const void* in, size_t count, DataType type, void* out) {
  Deadline deadline = Deadline::After(timeout_);
  BeginOp(OpKind::kAllGather, type, ReduceOp::kSum, count, 0);
  const size_t block = count * DataTypeSize(type);
  char* base = static_cast<char*>(out);
  if (count > 0) std::memmove(base + static_cast<size_t>(rank()) * block, in, block);  // in may alias our block
  blocks_.resize(static_cast<size_t>(size()));
  for (int r = 0; r < size(); ++r) blocks_[r] = base + static_cast<size_t>(r) * block;
  AddRingAllGather(blocks_.data(), block);
  return Transfer(OpKind::kAllGather, deadline);
}

}  // namespace ringtrain::collective
