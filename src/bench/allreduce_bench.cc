#include "bench/allreduce_bench.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>

#include "bench/op_buffer.h"
#include "bench/result_check.h"

namespace ringtrain::bench {

Status ValidateOptions(const BenchOptions& o) {
  for (auto [name, v] : {std::pair<const char*, size_t>{"min_bytes", o.min_bytes}, {"max_bytes", o.max_bytes}}) {
    if (v == 0 || v % sizeof(float) != 0) {
      return InvalidArgumentError(std::string("--") + name + " must be a positive multiple of 4 (float32 elements), not " +
                                  std::to_string(v));
    }
  }
  if (o.min_bytes > o.max_bytes) {
    return InvalidArgumentError("--min_bytes (" + std::to_string(o.min_bytes) + ") is larger than --max_bytes (" +
                                std::to_string(o.max_bytes) + ")");
  }
  if (o.iters < 1) return InvalidArgumentError("--iters must be at least 1, not " + std::to_string(o.iters));
  if (o.warmup < 0) return InvalidArgumentError("--warmup must be at least 0, not " + std::to_string(o.warmup));
  return Status::Ok();
}

std::vector<size_t> SizeSchedule(size_t min_bytes, size_t max_bytes) {
  std::vector<size_t> sizes;
  if (min_bytes == 0) return sizes;
  for (size_t b = min_bytes; b <= max_bytes; b *= 4) {
    sizes.push_back(b);
    if (b > max_bytes / 4) break;  // the next size would pass max (or overflow)
  }
  return sizes;
}

double BusBandwidthFactor(int ranks) { return ranks > 1 ? 2.0 * (ranks - 1) / ranks : 0.0; }

BenchRow MakeRow(size_t bytes, double time_us, int ranks) {
  BenchRow row;
  row.bytes = bytes;
  row.time_us = time_us;
  // bytes per microsecond = 1e6 bytes/s; / 1e3 gives 1e9 bytes/s.
  row.algbw_GBps = time_us > 0 ? static_cast<double>(bytes) / time_us / 1e3 : 0.0;
  row.busbw_GBps = row.algbw_GBps * BusBandwidthFactor(ranks);
  return row;
}

double Median(std::vector<double> samples) {
  if (samples.empty()) return 0;
  const size_t mid = samples.size() / 2;
  std::nth_element(samples.begin(), samples.begin() + static_cast<long>(mid), samples.end());
  double upper = samples[mid];
  if (samples.size() % 2 == 1) return upper;
  double lower = *std::max_element(samples.begin(), samples.begin() + static_cast<long>(mid));
  return (lower + upper) / 2;
}

namespace {

std::string Where(size_t bytes, int iteration, int warmup) {
  return "all-reduce of " + std::to_string(bytes) + " bytes, " +
         (iteration < warmup ? "warm-up iteration " + std::to_string(iteration)
                             : "timed iteration " + std::to_string(iteration - warmup));
}

// One size: warm-up and timed operations, each filled before and checked after.
StatusOr<BenchRow> MeasureSize(collective::Communicator* comm, OpBuffer* buf, size_t bytes, const BenchOptions& o) {
  const size_t count = bytes / sizeof(float);
  std::vector<double> times_us;
  times_us.reserve(static_cast<size_t>(o.iters));
  for (int it = 0; it < o.warmup + o.iters; ++it) {
    FillContribution(buf->host(), count, comm->rank(), it);
    RT_RETURN_IF_ERROR(buf->CopyIn(count));
    auto start = std::chrono::steady_clock::now();
    Status st = comm->AllReduce(buf->data(), count, collective::ReduceOp::kSum);
    auto end = std::chrono::steady_clock::now();
    if (!st.ok()) return st.WithContext(Where(bytes, it, o.warmup));
    RT_RETURN_IF_ERROR(buf->CopyOut(count));
    st = CheckSum(buf->host(), count, comm->size(), it);
    if (!st.ok()) return st.WithContext(Where(bytes, it, o.warmup) + " on rank " + std::to_string(comm->rank()));
    if (it >= o.warmup) times_us.push_back(std::chrono::duration<double, std::micro>(end - start).count());
  }
  return MakeRow(bytes, Median(std::move(times_us)), comm->size());
}

}  // namespace

Status RunAllReduceBench(collective::Communicator* comm, const BenchOptions& options,
                         const std::function<void(const BenchRow&)>& on_row) {
  RT_RETURN_IF_ERROR(ValidateOptions(options));
  if (comm->size() > kMaxCheckedRanks) {
    return InvalidArgumentError("the benchmark checks exact sums for at most " + std::to_string(kMaxCheckedRanks) +
                                " ranks, and this cluster has " + std::to_string(comm->size()));
  }
  // One buffer of the largest size serves every size (a prefix of it).
  const std::vector<size_t> sizes = SizeSchedule(options.min_bytes, options.max_bytes);
  const size_t max_count = sizes.back() / sizeof(float);
  std::unique_ptr<OpBuffer> buf;
  if (options.device_memory) {
    RT_ASSIGN_OR_RETURN(buf, AllocateDeviceBuffer(max_count));
  } else {
    buf = AllocateHostBuffer(max_count);
  }
  for (size_t bytes : sizes) {
    RT_ASSIGN_OR_RETURN(BenchRow row, MeasureSize(comm, buf.get(), bytes, options));
    on_row(row);
  }
  return Status::Ok();
}

}  // namespace ringtrain::bench
