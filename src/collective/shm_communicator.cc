#include "collective/shm_communicator.h"

#include <algorithm>
#include <cstring>

#include "collective/backends.h"
#include "collective/shm_reduce.h"

namespace ringtrain::collective {
namespace {

// Up to this many bytes an AllReduce takes the one-step path: one round of events
// instead of two per chunk, at the price of every rank summing the whole vector.
constexpr size_t kSmallAllReduceBytes = 16 << 10;
// Parts of an AllReduce chunk start at multiples of 16 floats: whole cache lines.
constexpr size_t kPartAlign = 16;

size_t CeilDiv(size_t a, size_t b) { return (a + b - 1) / b; }
size_t RoundUp(size_t a, size_t to) { return CeilDiv(a, to) * to; }

}  // namespace

StatusOr<std::unique_ptr<Communicator>> ShmCommunicator::Create(const CommunicatorOptions& options, int rank,
                                                                int size, store::Store* store) {
  if (size < 1 || rank < 0 || rank >= size) {
    return InvalidArgumentError("shared-memory communicator: rank " + std::to_string(rank) + " of " +
                                std::to_string(size) + " ranks is out of range");
  }
  if (store == nullptr && size > 1) return InvalidArgumentError("shared-memory communicator: no store to meet in");
  if (options.timeout.count() <= 0) {
    return InvalidArgumentError("communicator timeout must be positive, got " +
                                std::to_string(options.timeout.count()) + " ms");
  }
  // Every rank needs a part of at least one aligned block in an AllReduce chunk.
  const size_t slot_bytes = std::max(options.chunk_bytes, static_cast<size_t>(size) * kPartAlign * sizeof(float));
  auto segment = shm::Segment::Join(rank, size, slot_bytes, store, Deadline::After(options.timeout));
  if (!segment.ok()) return segment.status().WithContext("setting up shared memory for rank " + std::to_string(rank));
  return std::unique_ptr<Communicator>(new ShmCommunicator(std::move(segment).value(), rank, options.timeout));
}

ShmCommunicator::ShmCommunicator(std::unique_ptr<shm::Segment> segment, int rank, std::chrono::milliseconds timeout)
    : group_(std::move(segment), rank, timeout),
      slot_floats_(group_.segment().slot_bytes() / sizeof(float)),
      part_floats_(slot_floats_ / static_cast<size_t>(group_.size()) / kPartAlign * kPartAlign),
      sources_(static_cast<size_t>(group_.size()), nullptr) {}

Status ShmCommunicator::AwaitRelease(int b, bool parts, bool own_part) {
  uint64_t need = 0;
  if (parts) need = std::max(need, release_parts_[b]);
  if (own_part) need = std::max(need, release_own_[b]);
  return need == 0 ? Status::Ok() : group_.WaitAll(need);
}

Status ShmCommunicator::AllReduce(float* data, size_t count, ReduceOp op) {
  if (data == nullptr && count > 0) return InvalidArgumentError("AllReduce: data is null but count is > 0");
  const size_t n = static_cast<size_t>(size());
  const float divisor = op == ReduceOp::kMean ? static_cast<float>(n) : 0.0f;
  const bool small = count * sizeof(float) <= kSmallAllReduceBytes && count <= slot_floats_;
  const uint64_t chunks = small ? 1 : CeilDiv(count, part_floats_ * n);
  shm::OpDesc desc{shm::OpKind::kAllReduce, op == ReduceOp::kMean ? 1u : 0u, count};
  RT_RETURN_IF_ERROR(group_.Begin(desc, small ? 1 : 2 * chunks));
  Status s = small ? SmallAllReduce(data, count, divisor) : ChunkedAllReduce(data, count, divisor);
  chunks_ += chunks;
  return s.ok() ? s : group_.Fail(s);
}

Status ShmCommunicator::SmallAllReduce(float* data, size_t count, float divisor) {
  const int r = rank();
  const int b = BufferOf(0);
  RT_RETURN_IF_ERROR(AwaitRelease(b, true, true));
  if (count > 0) std::memcpy(Slot(r, b), data, count * sizeof(float));  // data may be null when count is 0
  group_.Publish();
  const uint64_t e = group_.seq();
  RT_RETURN_IF_ERROR(group_.WaitAll(e));
  for (int q = 0; q < size(); ++q) sources_[q] = q == r ? data : Slot(q, b);
  shm::ReduceSum(sources_.data(), size(), count, divisor, data, nullptr);
  release_parts_[b] = release_own_[b] = e + 1;  // our next event follows the reads
  return Status::Ok();
}

Status ShmCommunicator::ChunkedAllReduce(float* data, size_t count, float divisor) {
  const int r = rank();
  const int n = size();
  const size_t cap = part_floats_ * static_cast<size_t>(n);  // floats per chunk
  const uint64_t chunks = CeilDiv(count, cap);
  // Events of chunk k: base + 2k + 1 after copy-in, base + 2k + 2 after the reduction.
  const uint64_t base = group_.seq();
  auto length = [&](uint64_t k) { return std::min(cap, count - k * cap); };
  // Part q of a chunk of len floats: [q*pl, (q+1)*pl) clipped to len; at most part_floats_.
  auto part_len = [&](size_t len) { return RoundUp(CeilDiv(len, static_cast<size_t>(n)), kPartAlign); };
  auto part = [&](int q, size_t len, size_t* lo, size_t* hi) {
    const size_t pl = part_len(len);
    *lo = std::min(static_cast<size_t>(q) * pl, len);
    *hi = std::min(*lo + pl, len);
  };

  auto copy_in = [&](uint64_t k) -> Status {
    const int b = BufferOf(k);
    RT_RETURN_IF_ERROR(AwaitRelease(b, /*parts=*/true, /*own_part=*/false));
    const float* chunk = data + k * cap;
    const size_t len = length(k);
    float* slot = Slot(r, b);
    for (int q = 0; q < n; ++q) {
      size_t lo, hi;
      part(q, len, &lo, &hi);
      if (q != r && hi > lo) std::memcpy(slot + q * part_floats_, chunk + lo, (hi - lo) * sizeof(float));
    }
    group_.Publish();
    return Status::Ok();
  };

  RT_RETURN_IF_ERROR(copy_in(0));
  for (uint64_t k = 0; k < chunks; ++k) {
    const int b = BufferOf(k);
    float* chunk = data + k * cap;
    const size_t len = length(k);
    const bool last = k + 1 == chunks;

    RT_RETURN_IF_ERROR(group_.WaitAll(base + 2 * k + 1));
    RT_RETURN_IF_ERROR(AwaitRelease(b, /*parts=*/false, /*own_part=*/true));
    size_t lo, hi;
    part(r, len, &lo, &hi);
    float* result = Slot(r, b) + static_cast<size_t>(r) * part_floats_;
    for (int q = 0; q < n; ++q) sources_[q] = q == r ? chunk + lo : Slot(q, b) + static_cast<size_t>(r) * part_floats_;
    if (hi > lo) shm::ReduceSum(sources_.data(), n, hi - lo, divisor, chunk + lo, result);
    release_parts_[b] = base + 2 * k + 2;  // every owner has read its part of our buffer
    group_.Publish();

    if (!last) RT_RETURN_IF_ERROR(copy_in(k + 1));  // overlaps peers still reducing chunk k

    RT_RETURN_IF_ERROR(group_.WaitAll(base + 2 * k + 2));
    for (int q = 0; q < n; ++q) {
      part(q, len, &lo, &hi);
      if (q != r && hi > lo) {
        std::memcpy(chunk + lo, Slot(q, b) + static_cast<size_t>(q) * part_floats_, (hi - lo) * sizeof(float));
      }
    }
    // Our next event follows these reads: chunk k+1's reduction, or the next collective.
    release_own_[b] = base + 2 * k + 2 + (last ? 1 : 2);
  }
  return Status::Ok();
}

Status ShmCommunicator::Broadcast(float* data, size_t count, int root) {
  if (root < 0 || root >= size()) {
    return InvalidArgumentError("Broadcast: root " + std::to_string(root) + " is not a rank of this communicator (0.." +
                                std::to_string(size() - 1) + ")");
  }
  if (data == nullptr && count > 0) return InvalidArgumentError("Broadcast: data is null but count is > 0");
  const uint64_t chunks = std::max<uint64_t>(1, CeilDiv(count, slot_floats_));
  RT_RETURN_IF_ERROR(group_.Begin({shm::OpKind::kBroadcast, static_cast<uint32_t>(root), count}, chunks));
  const uint64_t base = group_.seq();
  Status s;
  for (uint64_t k = 0; k < chunks && s.ok(); ++k) {
    const int b = BufferOf(k);
    const size_t off = k * slot_floats_;
    const size_t len = std::min(slot_floats_, count - off);
    if (rank() == root) {
      s = AwaitRelease(b, true, true);
      if (!s.ok()) break;
      if (len > 0) std::memcpy(Slot(root, b), data + off, len * sizeof(float));
      group_.Publish();
    } else {
      s = group_.WaitRank(root, base + k + 1);
      if (!s.ok()) break;
      if (len > 0) std::memcpy(data + off, Slot(root, b), len * sizeof(float));
      group_.Publish();  // after the reads: the root may reuse the buffer once all have this
    }
    release_parts_[b] = std::max(release_parts_[b], base + k + 1);
    release_own_[b] = std::max(release_own_[b], base + k + 1);
  }
  chunks_ += chunks;
  return s.ok() ? s : group_.Fail(s);
}

Status ShmCommunicator::AllGather(const float* in, size_t count, float* out) {
  if ((in == nullptr || out == nullptr) && count > 0) {
    return InvalidArgumentError("AllGather: in or out is null but count is > 0");
  }
  const uint64_t chunks = std::max<uint64_t>(1, CeilDiv(count, slot_floats_));
  RT_RETURN_IF_ERROR(group_.Begin({shm::OpKind::kAllGather, 0, count}, chunks));
  const int r = rank();
  Status s;
  for (uint64_t k = 0; k < chunks && s.ok(); ++k) {
    const int b = BufferOf(k);
    const size_t off = k * slot_floats_;
    const size_t len = std::min(slot_floats_, count - off);
    s = AwaitRelease(b, true, true);
    if (!s.ok()) break;
    if (len > 0) std::memcpy(Slot(r, b), in + off, len * sizeof(float));
    group_.Publish();
    const uint64_t e = group_.seq();
    s = group_.WaitAll(e);
    if (!s.ok()) break;
    for (int q = 0; q < size(); ++q) {
      float* dst = out + static_cast<size_t>(q) * count + off;
      if (len == 0) {
      } else if (q != r) {
        std::memcpy(dst, Slot(q, b), len * sizeof(float));
      } else if (dst != in + off) {
        std::memmove(dst, in + off, len * sizeof(float));  // in may lie inside out
      }
    }
    release_parts_[b] = release_own_[b] = e + 1;
  }
  chunks_ += chunks;
  return s.ok() ? s : group_.Fail(s);
}

Status ShmCommunicator::Barrier() {
  RT_RETURN_IF_ERROR(group_.Begin({shm::OpKind::kBarrier, 0, 0}, 1));
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
