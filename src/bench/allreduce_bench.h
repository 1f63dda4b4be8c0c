// The all-reduce benchmark's measurement loop, in the spirit of nccl-tests'
// all_reduce_perf: for each size, `warmup` untimed operations, then `iters` timed
// ones; every result (warm-up included) is checked element by element.
//
// Timing: each operation is timed alone with steady_clock, with no barrier before it
// (a barrier per operation would add its own latency to the 4-byte figure); the ranks
// drift little because every all-reduce synchronises them. The reported time is the
// median of the per-operation times on this rank. Filling the input and checking the
// result happen outside the timed region.
//
// Threading: the loop runs on the calling thread, which must be the only one issuing
// collectives on `comm`. Blocking: every operation is bounded by the communicator's
// timeout, so the loop ends with an error when a peer dies or hangs.
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

#include "collective/communicator.h"
#include "common/status.h"

namespace ringtrain::bench {

struct BenchOptions {
  size_t min_bytes = 4;
  size_t max_bytes = 64 << 20;
  int iters = 20;   // timed operations per size
  int warmup = 5;   // untimed operations per size, before the timed ones
  // Operate on device memory (the NCCL backend). Else host memory.
  bool device_memory = false;
};

// INVALID_ARGUMENT naming the flag: sizes must be positive multiples of 4 (float32)
// with min <= max, iters >= 1, warmup >= 0.
Status ValidateOptions(const BenchOptions& options);

// min, 4*min, 16*min, ... up to and including max (when it is on the schedule).
std::vector<size_t> SizeSchedule(size_t min_bytes, size_t max_bytes);

struct BenchRow {
  size_t bytes = 0;
  double time_us = 0;     // median per-operation time
  double algbw_GBps = 0;  // bytes / time, in 1e9 bytes per second
  double busbw_GBps = 0;  // algbw * BusBandwidthFactor(ranks)
};

// nccl-tests' bus-bandwidth factor for all-reduce, 2(n-1)/n: the fraction of the data
// each rank must send and receive, so that busbw compares with the link speed
// whatever the number of ranks. 0 for one rank.
double BusBandwidthFactor(int ranks);
// A row from a size, the median time and the number of ranks.
BenchRow MakeRow(size_t bytes, double time_us, int ranks);
// The median of `samples` (the mean of the middle two for an even count); 0 if empty.
double Median(std::vector<double> samples);

// Runs the schedule on `comm`, calling on_row after each size. Stops at the first
// error: a collective's error as returned (naming the peer), or DATA_LOSS when a
// result is wrong, prefixed with the size and iteration.
Status RunAllReduceBench(collective::Communicator* comm, const BenchOptions& options,
                         const std::function<void(const BenchRow&)>& on_row);

}  // namespace ringtrain::bench
