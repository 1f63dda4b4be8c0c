// How the all-reduce benchmark prints its results: nccl-tests' columns (bytes,
// time_us, algbw_GBps, busbw_GBps) as text rows under a '#' header, or one JSON object
// per size per line. Pure functions; thread-safe.
#pragma once

#include <string>

#include "bench/allreduce_bench.h"

namespace ringtrain::bench {

struct RunDescription {
  int ranks = 1;
  std::string backend;    // what the communicator is (Communicator::backend_name())
  std::string requested;  // what --backend asked for ("auto", "ring", "tcp", "nccl")
  // RING's transport: "tcp" when forced, else "auto" (shared memory when every rank is
  // on one host, TCP otherwise; the factory logs which). Empty for other backends.
  std::string transport;
  BenchOptions options;
};

// '#' lines: what runs (ranks, backend, sizes, iterations), how it is timed, and the
// column names. Ends with a newline.
std::string FormatHeader(const RunDescription& run);
// One text row, aligned under the header's columns, with a newline.
std::string FormatRow(const BenchRow& row);
// {"bytes":..,"time_us":..,"algbw_GBps":..,"busbw_GBps":..,"workers":n,"backend":"..",
//  "transport":".."} on one line, with a newline ("transport" only when set).
std::string FormatJsonRow(const BenchRow& row, const RunDescription& run);

}  // namespace ringtrain::bench
