#include "bench/report.h"

#include <cmath>
#include <cstdio>

#include <nlohmann/json.hpp>

namespace ringtrain::bench {
namespace {

constexpr const char* kRowFormat = "%12zu  %12.2f  %12.3f  %12.3f\n";
constexpr const char* kHeaderFormat = "#%11s  %12s  %12s  %12s\n";

// Rounded for printing, so that JSON carries what the text rows show.
double Round(double v, int decimals) {
  double scale = std::pow(10.0, decimals);
  return std::round(v * scale) / scale;
}

}  // namespace

std::string FormatHeader(const RunDescription& run) {
  const BenchOptions& o = run.options;
  std::string h = "# ringtrain bench allreduce: " + std::to_string(run.ranks) + " ranks, backend " + run.backend +
                  (run.transport.empty() ? "" : ", transport " + run.transport) + " (--backend " + run.requested +
                  "), float32 sum\n";
  h += "# sizes " + std::to_string(o.min_bytes) + ".." + std::to_string(o.max_bytes) + " bytes (x4), " +
       std::to_string(o.iters) + " timed + " + std::to_string(o.warmup) + " warm-up ops each; every result checked\n";
  h += "# time_us: median of rank 0's per-op times (steady_clock, each op alone, no barrier); "
       "busbw = algbw*2(n-1)/n\n";
  char cols[128];
  std::snprintf(cols, sizeof(cols), kHeaderFormat, "bytes", "time_us", "algbw_GBps", "busbw_GBps");
  return h + cols;
}

std::string FormatRow(const BenchRow& row) {
  char line[128];
  std::snprintf(line, sizeof(line), kRowFormat, row.bytes, row.time_us, row.algbw_GBps, row.busbw_GBps);
  return line;
}

std::string FormatJsonRow(const BenchRow& row, const RunDescription& run) {
  // nlohmann keeps insertion order only with ordered_json; the columns read best in
  // the text rows' order.
  nlohmann::ordered_json j;
  j["bytes"] = row.bytes;
  j["time_us"] = Round(row.time_us, 2);
  j["algbw_GBps"] = Round(row.algbw_GBps, 3);
  j["busbw_GBps"] = Round(row.busbw_GBps, 3);
  j["workers"] = run.ranks;
  j["backend"] = run.backend;
  if (!run.transport.empty()) j["transport"] = run.transport;
  return j.dump() + "\n";
}

}  // namespace ringtrain::bench
