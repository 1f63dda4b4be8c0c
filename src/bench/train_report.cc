#include "bench/train_report.h"

#include <cstdio>
#include <sstream>

#include "common/json.h"

namespace ringtrain::bench {
namespace {

StatusOr<double> Figure(const nlohmann::json& r, const char* name, int epoch) {
  auto it = r.find(name);
  if (it == r.end() || !it->is_number()) {
    return InvalidArgumentError("history epoch " + std::to_string(epoch) + " has no number '" + name +
                                "'; the history was written by an older ringtrain");
  }
  return it->get<double>();
}

}  // namespace

StatusOr<std::vector<nlohmann::json>> ParseHistory(const std::string& text) {
  std::vector<nlohmann::json> records;
  std::istringstream in(text);
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (line.empty()) continue;
    auto j = ParseJson(line, "history line " + std::to_string(n));
    if (!j.ok()) return j.status();
    if (!j->is_object()) {
      return InvalidArgumentError("history line " + std::to_string(n) + " is not a JSON object");
    }
    records.push_back(std::move(j).value());
  }
  return records;
}

StatusOr<TrainSummary> SummarizeTraining(const std::vector<nlohmann::json>& records, int warmup_epochs) {
  TrainSummary s;
  s.warmup_epochs = warmup_epochs;
  for (const auto& r : records) {
    if (!r.contains("epoch")) continue;  // the evaluation line
    TrainEpoch e;
    e.epoch = r["epoch"].is_number_integer() ? r["epoch"].get<int>() : 0;
    RT_ASSIGN_OR_RETURN(e.images_per_sec, Figure(r, "images_per_sec", e.epoch));
    RT_ASSIGN_OR_RETURN(e.step_ms, Figure(r, "step_ms", e.epoch));
    RT_ASSIGN_OR_RETURN(e.comm_wait_share, Figure(r, "comm_wait_share", e.epoch));
    s.epochs.push_back(e);
  }
  int counted = 0;
  for (const TrainEpoch& e : s.epochs) {
    if (e.epoch <= warmup_epochs) continue;
    s.images_per_sec += e.images_per_sec;
    s.step_ms += e.step_ms;
    s.comm_wait_share += e.comm_wait_share;
    ++counted;
  }
  if (counted == 0) {
    return InvalidArgumentError("the run has " + std::to_string(s.epochs.size()) + " epoch(s) and " +
                                std::to_string(warmup_epochs) +
                                " are warm-up; set --epochs (or the job's epochs) higher");
  }
  s.images_per_sec /= counted;
  s.step_ms /= counted;
  s.comm_wait_share /= counted;
  return s;
}

std::string FormatTrainSummary(const TrainSummary& s, const std::string& job, int workers) {
  std::string out;
  char line[256];
  std::snprintf(line, sizeof(line), "# ringtrain bench train: %s, %d worker(s); epochs 1..%d are warm-up\n",
                job.c_str(), workers, s.warmup_epochs);
  out += line;
  out += "#  epoch  images_per_sec    step_ms  comm_wait_share\n";
  for (const TrainEpoch& e : s.epochs) {
    std::snprintf(line, sizeof(line), "%8d %15.1f %10.3f %16.3f%s\n", e.epoch, e.images_per_sec, e.step_ms,
                  e.comm_wait_share, e.epoch <= s.warmup_epochs ? "  (warm-up)" : "");
    out += line;
  }
  std::snprintf(line, sizeof(line), "RESULT job=%s workers=%d images_per_sec=%.1f step_ms=%.3f comm_wait_share=%.3f\n",
                job.c_str(), workers, s.images_per_sec, s.step_ms, s.comm_wait_share);
  out += line;
  return out;
}

}  // namespace ringtrain::bench
