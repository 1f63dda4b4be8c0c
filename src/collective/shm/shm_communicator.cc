#include "collective/shm/shm_communicator.h"

#include <algorithm>
#include <cstring>

#include "collective/backends.h"
#include "collective/reduce.h"
#include "collective/sum_order.h"

namespace ringtrain::collective {
namespace {

// Up to this many bytes an AllReduce takes the one-step path: one round of events
// instead of two per chunk, at the price of every rank summing the whole vector.
constexpr size_t kSmallAllReduceBytes = 16 << 10;
// Parts of an AllReduce chunk start at multiples of 64 bytes: whole cache lines.
constexpr size_t kPartAlignBytes = 64;

size_t CeilDiv(size_t a, size_t b) { return (a + b - 1) / b; }
size_t RoundUp(size_t a, size_t to) { return CeilDiv(a, to) * to; }

}  // namespace

StatusOr<std::unique_ptr<Communicator>> ShmCommunicator::Create(const CommunicatorOptions& options, int rank,
                                                                int size, store::Store* store) {
  if (size < 1 || rank < 0 || rank >= size) {
    return InvalidArgumentError("shared-memory communicator: rank " + std::to_string(rank) + " of " +
                                std::to_string(size) + " ranks is out of range");
  }
  if (size > shm::kMaxRanks) {
    return InvalidArgumentError("shared-memory communicator: " + std::to_string(size) +
                                " ranks on one host; it supports at most " + std::to_string(shm::kMaxRanks) +
                                " (set RINGTRAIN_TRANSPORT=tcp)");
  }
  if (store == nullptr && size > 1) return InvalidArgumentError("shared-memory communicator: no store to meet in");
  if (options.timeout.count() <= 0) {
    return InvalidArgumentError("communicator timeout must be positive, got " +
                                std::to_string(options.timeout.count()) + " ms");
  }
  // Every rank needs a part of at least one aligned block in an AllReduce chunk.
  const size_t slot_bytes = std::max(options.chunk_bytes, static_cast<size_t>(size) * kPartAlignBytes);
  auto segment = shm::Segment::Join(rank, size, slot_bytes, store, Deadline::After(options.timeout));
  if (!segment.ok()) return segment.status().WithContext("setting up shared memory for rank " + std::to_string(rank));
  return std::unique_ptr<Communicator>(new ShmCommunicator(std::move(segment).value(), rank, options.timeout));
}

ShmCommunicator::ShmCommunicator(std::unique_ptr<shm::Segment> segment, int rank, std::chrono::milliseconds timeout)
    : CommunicatorBase(rank, segment->size()),
      group_(std::move(segment), rank, timeout, abort_signal()),
      slot_bytes_(group_.segment().slot_bytes()),
      part_bytes_(slot_bytes_ / static_cast<size_t>(group_.size()) / kPartAlignBytes * kPartAlignBytes),
      sources_(static_cast<size_t>(group_.size()), nullptr),
      ordered_(static_cast<size_t>(group_.size()), nullptr) {}

Status ShmCommunicator::AwaitRelease(int b, bool parts, bool own_part) {
  uint64_t need = 0;
  if (parts) need = std::max(need, release_parts_[b]);
  if (own_part) need = std::max(need, release_own_[b]);
  return need == 0 ? Status::Ok() : group_.WaitAll(need);
}

Status ShmCommunicator::DoAllReduce(void* data, size_t count, DataType type, ReduceOp op) {
  const size_t n = static_cast<size_t>(size());
  const size_t bytes = count * DataTypeSize(type);
  const int divide_by = op == ReduceOp::kMean ? size() : 0;
  const bool small = bytes <= kSmallAllReduceBytes && bytes <= slot_bytes_;
  const uint64_t chunks = small ? 1 : CeilDiv(count, part_bytes_ / DataTypeSize(type) * n);
  shm::OpDesc desc{shm::OpKind::kAllReduce, type, op == ReduceOp::kMean ? 1u : 0u, count};
  RT_RETURN_IF_ERROR(group_.Begin(desc, small ? 1 : 2 * chunks));
  char* bytes_in = static_cast<char*>(data);
  Status s = small ? SmallAllReduce(bytes_in, count, type, divide_by)
                   : ChunkedAllReduce(bytes_in, count, type, divide_by);
  chunks_ += chunks;
  return s.ok() ? s : group_.Fail(s);
}

Status ShmCommunicator::SmallAllReduce(char* data, size_t count, DataType type, int divide_by) {
  const int r = rank();
  const int b = BufferOf(0);
  RT_RETURN_IF_ERROR(AwaitRelease(b, true, true));
  if (count > 0) std::memcpy(Slot(r, b), data, count * DataTypeSize(type));  // data may be null when count is 0
  group_.Publish();
  const uint64_t e = group_.seq();
  RT_RETURN_IF_ERROR(group_.WaitAll(e));
  for (int q = 0; q < size(); ++q) sources_[q] = q == r ? static_cast<const void*>(data) : Slot(q, b);
  internal::ReduceRangeInSumOrder(SumOrder(size(), count, type), type, sources_.data(), 0, count, divide_by, data,
                                  nullptr, ordered_.data());
  release_parts_[b] = release_own_[b] = e + 1;  // our next event follows the reads
  return Status::Ok();
}

Status ShmCommunicator::ChunkedAllReduce(char* data, size_t count, DataType type, int divide_by) {
  const int r = rank();
  const int n = size();
  const size_t elem = DataTypeSize(type);
  const size_t part_cap = part_bytes_ / elem;           // elements in one rank's part
  const size_t cap = part_cap * static_cast<size_t>(n);  // elements per chunk
  const size_t align = kPartAlignBytes / elem;          // parts start on cache lines
  const uint64_t chunks = CeilDiv(count, cap);
  const SumOrder order(n, count, type);  // each element's sources are added in this order
  // Events of chunk k: base + 2k + 1 after copy-in, base + 2k + 2 after the reduction.
  const uint64_t base = group_.seq();
  auto length = [&](uint64_t k) { return std::min(cap, count - k * cap); };
  // Part q of a chunk of len elements: [q*pl, (q+1)*pl) clipped to len; at most part_cap.
  auto part_len = [&](size_t len) { return RoundUp(CeilDiv(len, static_cast<size_t>(n)), align); };
  auto part = [&](int q, size_t len, size_t* lo, size_t* hi) {
    const size_t pl = part_len(len);
    *lo = std::min(static_cast<size_t>(q) * pl, len);
    *hi = std::min(*lo + pl, len);
  };
  // Rank q's part of its buffer b (where the reduced part q lives), and of ours.
  auto part_slot = [&](int owner, int b, int q) { return Slot(owner, b) + static_cast<size_t>(q) * part_bytes_; };

  auto copy_in = [&](uint64_t k) -> Status {
    const int b = BufferOf(k);
    RT_RETURN_IF_ERROR(AwaitRelease(b, /*parts=*/true, /*own_part=*/false));
    const char* chunk = data + k * cap * elem;
    const size_t len = length(k);
    for (int q = 0; q < n; ++q) {
      size_t lo, hi;
      part(q, len, &lo, &hi);
      if (q != r && hi > lo) std::memcpy(part_slot(r, b, q), chunk + lo * elem, (hi - lo) * elem);
    }
    group_.Publish();
    return Status::Ok();
  };

  RT_RETURN_IF_ERROR(copy_in(0));
  for (uint64_t k = 0; k < chunks; ++k) {
    const int b = BufferOf(k);
    char* chunk = data + k * cap * elem;
    const size_t len = length(k);
    const bool last = k + 1 == chunks;

    RT_RETURN_IF_ERROR(group_.WaitAll(base + 2 * k + 1));
    RT_RETURN_IF_ERROR(AwaitRelease(b, /*parts=*/false, /*own_part=*/true));
    size_t lo, hi;
    part(r, len, &lo, &hi);
    char* result = part_slot(r, b, r);
    for (int q = 0; q < n; ++q) {
      sources_[q] = q == r ? static_cast<const void*>(chunk + lo * elem) : part_slot(q, b, r);
    }
    if (hi > lo) {
      internal::ReduceRangeInSumOrder(order, type, sources_.data(), k * cap + lo, k * cap + hi, divide_by,
                                      chunk + lo * elem, result, ordered_.data());
    }
    release_parts_[b] = base + 2 * k + 2;  // every owner has read its part of our buffer
    group_.Publish();

    if (!last) RT_RETURN_IF_ERROR(copy_in(k + 1));  // overlaps peers still reducing chunk k

    RT_RETURN_IF_ERROR(group_.WaitAll(base + 2 * k + 2));
    for (int q = 0; q < n; ++q) {
      part(q, len, &lo, &hi);
      if (q != r && hi > lo) std::memcpy(chunk + lo * elem, part_slot(q, b, q), (hi - lo) * elem);
    }
    // Our next event follows these reads: chunk k+1's reduction, or the next collective.
    release_own_[b] = base + 2 * k + 2 + (last ? 1 : 2);
  }
  return Status::Ok();
}

Status ShmCommunicator::DoBroadcast(void* data, size_t count, DataType type, int root) {
  // Pure copies: moved as bytes, a slot buffer per chunk.
  const size_t total = count * DataTypeSize(type);
  const uint64_t chunks = std::max<uint64_t>(1, CeilDiv(total, slot_bytes_));
  RT_RETURN_IF_ERROR(group_.Begin({shm::OpKind::kBroadcast, type, static_cast<uint32_t>(root), count}, chunks));
  const uint64_t base = group_.seq();
  char* bytes = static_cast<char*>(data);
  Status s;
  for (uint64_t k = 0; k < chunks && s.ok(); ++k) {
    const int b = BufferOf(k);
    const size_t off = k * slot_bytes_;
    const size_t len = std::min(slot_bytes_, total - off);
    if (rank() == root) {
      s = AwaitRelease(b, true, true);
      if (!s.ok()) break;
      if (len > 0) std::memcpy(Slot(root, b), bytes + off, len);
      group_.Publish();
    } else {
      s = group_.WaitRank(root, base + k + 1);
      if (!s.ok()) break;
      if (len > 0) std::memcpy(bytes + off, Slot(root, b), len);
      group_.Publish();  // after the reads: the root may reuse the buffer once all have this
    }
    release_parts_[b] = std::max(release_parts_[b], base + k + 1);
    release_own_[b] = std::max(release_own_[b], base + k + 1);
  }
  chunks_ += chunks;
  return s.ok() ? s : group_.Fail(s);
}

Status ShmCommunicator::DoAllGather(const void* in, size_t count, DataType type, void* out) {
  const size_t block = count * DataTypeSize(type);  // one rank's bytes
  const uint64_t chunks = std::max<uint64_t>(1, CeilDiv(block, slot_bytes_));
  RT_RETURN_IF_ERROR(group_.Begin({shm::OpKind::kAllGather, type, 0, count}, chunks));
  const int r = rank();
  const char* src = static_cast<const char*>(in);
  char* dst_base = static_cast<char*>(out);
  Status s;
  for (uint64_t k = 0; k < chunks && s.ok(); ++k) {
    const int b = BufferOf(k);
    const size_t off = k * slot_bytes_;
    const size_t len = std::min(slot_bytes_, block - off);
    s = AwaitRelease(b, true, true);
    if (!s.ok()) break;
    if (len > 0) std::memcpy(Slot(r, b), src + off, len);
    group_.Publish();
    const uint64_t e = group_.seq();
    s = group_.WaitAll(e);
    if (!s.ok()) break;
    for (int q = 0; q < size(); ++q) {
      char* dst = dst_base + static_cast<size_t>(q) * block + off;
      if (len == 0) {
      } else if (q != r) {
        std::memcpy(dst, Slot(q, b), len);
      } else if (dst != src + off) {
        std::memmove(dst, src + off, len);  // in may lie inside out
      }
    }
    release_parts_[b] = release_own_[b] = e + 1;
  }
  chunks_ += chunks;
  return s.ok() ? s : group_.Fail(s);
}

Status ShmCommunicator::DoBarrier() {
  RT_RETURN_IF_ERROR(group_.Begin({shm::OpKind::kBarrier, DataType::kFloat32, 0, 0}, 1));
  group_.Publish();
  Status s = group_.WaitAll(group_.seq());
  return s.ok() ? s : group_.Fail(s);
}

namespace internal {

StatusOr<std::unique_ptr<Communicator>> CreateShm(const CommunicatorOptions& options, int rank, int size,
                                                  store::Store* store) {
  return ShmCommunicator::Create(options, rank, size, store);
}

}  // namespace internal
}  // namespace ringtrain::collective
