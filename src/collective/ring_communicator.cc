// RingCommunicator's operations, each laid out as the pieces of one transfer
// (ring_transfer.cc runs them).
#include "collective/ring_communicator.h"

#include <algorithm>
#include <cstring>

namespace ringtrain::collective {
namespace {

// out[i] = (blocks[0][i] + blocks[1][i] + ... + blocks[n-1][i]) [/ divisor], added in
// rank order so that every rank gets the same bits. out may be one of the blocks: each
// tile is read completely before it is written.
void SumInRankOrder(const float* const* blocks, int n, size_t count, float* out, float divisor) {
  constexpr size_t kTile = 2048;  // 8 KiB accumulator, stays in L1
  float acc[kTile];
  for (size_t start = 0; start < count; start += kTile) {
    const size_t len = std::min(kTile, count - start);
    const float* first = blocks[0] + start;
    for (size_t i = 0; i < len; ++i) acc[i] = first[i];
    for (int r = 1; r < n; ++r) {
      const float* __restrict src = blocks[r] + start;
      for (size_t i = 0; i < len; ++i) acc[i] += src[i];
    }
    float* dst = out + start;
    if (divisor == 0.0f) {
      std::memcpy(dst, acc, len * sizeof(float));
    } else {
      for (size_t i = 0; i < len; ++i) dst[i] = acc[i] / divisor;
    }
  }
}

}  // namespace

size_t RingCommunicator::SmallAllReduceBytes(int size) {
  // Measured on loopback, 2 cores, 2-4 processes: the all-gather needs n-1 hops instead
  // of 2(n-1) but sends n/2 times the ring's bytes and sums only after everything has
  // arrived; it is as fast or faster up to 64 KiB for 2 ranks, 32 KiB for 3-4 ranks.
  if (size <= 2) return 64u << 10;
  if (size <= 4) return 32u << 10;
  return 16u << 10;
}

void RingCommunicator::AddRingAllGather(char* const* blocks, size_t len) {
  // Step k sends block rank-k (our own at k=0, then the one received at step k-1) and
  // receives block rank-k-1.
  const int first = static_cast<int>(recv_.size());
  for (int k = 0; k < size_ - 1; ++k) {
    send_.push_back({blocks[Mod(rank_ - k)], len, k == 0 ? -1 : first + k - 1});
    recv_.push_back({blocks[Mod(rank_ - k - 1)], len, false, 0.0f});
  }
}

Status RingCommunicator::SmallAllReduce(float* data, size_t count, ReduceOp op, OpKind kind, Deadline deadline) {
  const size_t others = static_cast<size_t>(size_ - 1) * count;
  if (gather_.size() < others) gather_.resize(others);
  blocks_.resize(static_cast<size_t>(size_));
  for (int r = 0, slot = 0; r < size_; ++r) {
    blocks_[r] = reinterpret_cast<char*>(r == rank_ ? data : gather_.data() + count * slot++);
  }
  AddRingAllGather(blocks_.data(), count * sizeof(float));
  RT_RETURN_IF_ERROR(Transfer(kind, deadline));
  SumInRankOrder(reinterpret_cast<const float* const*>(blocks_.data()), size_, count, data,
                 op == ReduceOp::kMean ? static_cast<float>(size_) : 0.0f);
  return Status::Ok();
}

Status RingCommunicator::LargeAllReduce(float* data, size_t count, ReduceOp op, OpKind kind, Deadline deadline) {
  const size_t n = static_cast<size_t>(size_);
  const size_t base = count / n;
  const size_t extra = count % n;
  // Segment i: base elements, plus one for the first `extra` segments.
  auto offset = [&](int i) { return static_cast<size_t>(i) * base + std::min<size_t>(i, extra); };
  auto bytes = [&](int i) { return (base + (static_cast<size_t>(i) < extra ? 1 : 0)) * sizeof(float); };
  auto at = [&](int i) { return reinterpret_cast<char*>(data + offset(i)); };
  const int first = static_cast<int>(recv_.size());
  const float divisor = op == ReduceOp::kMean ? static_cast<float>(size_) : 0.0f;

  // Reduce-scatter: step k sends segment rank-k (our input at k=0, then the partial sum
  // reduced at step k-1, chunk by chunk) and adds segment rank-k-1 into ours. The last
  // step completes segment rank+1, which this rank owns; the mean divides it there,
  // once, so every copy is bit-identical.
  for (int k = 0; k < size_ - 1; ++k) {
    int s_send = Mod(rank_ - k);
    int s_recv = Mod(rank_ - k - 1);
    send_.push_back({at(s_send), bytes(s_send), k == 0 ? -1 : first + k - 1});
    recv_.push_back({at(s_recv), bytes(s_recv), true, k == size_ - 2 ? divisor : 0.0f});
  }
  // All-gather: step k sends segment rank+1-k (the owned one as it completes, then the
  // one received at step k-1) and receives segment rank-k straight into place.
  for (int k = 0; k < size_ - 1; ++k) {
    int s_send = Mod(rank_ + 1 - k);
    int s_recv = Mod(rank_ - k);
    send_.push_back({at(s_send), bytes(s_send), first + size_ - 2 + k});
    recv_.push_back({at(s_recv), bytes(s_recv), false, 0.0f});
  }
  return Transfer(kind, deadline);
}

Status RingCommunicator::AllReduce(float* data, size_t count, ReduceOp op) {
  if (data == nullptr && count > 0) return InvalidArgumentError("AllReduce: data is null but count is > 0");
  Deadline deadline = Deadline::After(timeout_);
  RT_RETURN_IF_ERROR(BeginOp(OpKind::kAllReduce, count, 0));
  if (count * sizeof(float) <= SmallAllReduceBytes(size_)) {
    return SmallAllReduce(data, count, op, OpKind::kAllReduce, deadline);
  }
  return LargeAllReduce(data, count, op, OpKind::kAllReduce, deadline);
}

Status RingCommunicator::Barrier() {
  Deadline deadline = Deadline::After(timeout_);
  RT_RETURN_IF_ERROR(BeginOp(OpKind::kBarrier, 0, 0));
  // Every rank's token travels n-1 hops around the ring, so no rank can leave before
  // it has heard (directly or relayed) from every other rank.
  if (gather_.size() < static_cast<size_t>(size_)) gather_.resize(static_cast<size_t>(size_));
  blocks_.resize(static_cast<size_t>(size_));
  for (int r = 0; r < size_; ++r) blocks_[r] = reinterpret_cast<char*>(gather_.data() + r);
  gather_[static_cast<size_t>(rank_)] = static_cast<float>(rank_);
  AddRingAllGather(blocks_.data(), sizeof(float));
  return Transfer(OpKind::kBarrier, deadline);
}

Status RingCommunicator::Broadcast(float* data, size_t count, int root) {
  if (root < 0 || root >= size_) {
    return InvalidArgumentError("Broadcast: root " + std::to_string(root) + " is not a rank of this ring (0.." +
                                std::to_string(size_ - 1) + ")");
  }
  if (data == nullptr && count > 0) return InvalidArgumentError("Broadcast: data is null but count is > 0");
  Deadline deadline = Deadline::After(timeout_);
  RT_RETURN_IF_ERROR(BeginOp(OpKind::kBroadcast, count, static_cast<uint32_t>(root)));
  // A chain root -> root+1 -> ... -> root-1; middle ranks relay each piece as it lands.
  // Only the header travels from root-1 back to root, so the root too checks that its
  // neighbour issued the same operation.
  const int position = Mod(rank_ - root);
  const size_t len = count * sizeof(float);
  char* bytes = reinterpret_cast<char*>(data);
  if (position != 0) recv_.push_back({bytes, len, false, 0.0f});
  if (position != size_ - 1) send_.push_back({bytes, len, position == 0 ? -1 : 1});
  return Transfer(OpKind::kBroadcast, deadline);
}

Status RingCommunicator::AllGather(const float* in, size_t count, float* out) {
  if ((in == nullptr || out == nullptr) && count > 0) {
    return InvalidArgumentError("AllGather: in or out is null but count is > 0");
  }
  Deadline deadline = Deadline::After(timeout_);
  RT_RETURN_IF_ERROR(BeginOp(OpKind::kAllGather, count, 0));
  const size_t block = count * sizeof(float);
  char* base = reinterpret_cast<char*>(out);
  if (count > 0) std::memmove(base + static_cast<size_t>(rank_) * block, in, block);  // in may alias our block
  blocks_.resize(static_cast<size_t>(size_));
  for (int r = 0; r < size_; ++r) blocks_[r] = base + static_cast<size_t>(r) * block;
  AddRingAllGather(blocks_.data(), block);
  return Transfer(OpKind::kAllGather, deadline);
}

}  // namespace ringtrain::collective
