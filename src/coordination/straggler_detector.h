// Names the ranks that compute slower than the others (docs/guide/watching.md, "Stragglers"). For each
// global step, once every task has reported its compute time for it (the time before
// it waits for the all-reduce), each task is compared with the median over the tasks:
// slower than the median by more than `share` (and by more than kNoiseFloorSeconds, so
// that sub-millisecond jitter on tiny steps is not a straggler) counts one slow step.
// `steps` consecutive slow steps name the task a straggler (one kNamed change); its
// first step that is not slow after that ends it (one kRecovered change).
//
// A pure function of the reports (no clock, no I/O): tests feed it step times. Steps
// are judged in the order they complete; a step some task never reported (it skipped
// it: more steps than a heartbeat carries, or it failed) is dropped once a later step
// is complete. With fewer than two tasks nothing is judged.
//
// Threading: not thread-safe; the owner serialises calls. Nothing blocks.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace ringtrain::coordination {

struct StragglerSettings {
  double share = 0.2;  // RINGTRAIN_STRAGGLER_SHARE
  int steps = 10;      // RINGTRAIN_STRAGGLER_STEPS
};

// A task currently named, with its figures over its current run of slow steps.
struct StragglerInfo {
  std::string task;
  double compute_s = 0;         // its mean compute time per step over the run
  double median_compute_s = 0;  // the mean of the steps' medians over the run
  int64_t steps = 0;            // consecutive slow steps so far
};

struct StragglerChange {
  enum class Kind { kNamed, kRecovered };
  Kind kind;
  StragglerInfo info;  // kRecovered: the figures of the step that was not slow; steps = the run's length
  // One readable line: "straggler: worker:1 computes 0.094 s per step, 2.9x the median
  // 0.032 s, for 12 steps" or "straggler: worker:1 recovered: ...".
  std::string Line() const;
};

class StragglerDetector {
 public:
  // Differences below this are never slow (timer and scheduling noise).
  static constexpr double kNoiseFloorSeconds = 1e-4;
  // Incomplete steps kept at most (a task that stopped reporting must not grow it).
  static constexpr size_t kMaxPendingSteps = 4096;

  // `tasks`: every training task, each of which reports every step.
  StragglerDetector(std::vector<std::string> tasks, StragglerSettings settings);

  // `task` computed `compute_s` seconds in global step `step`. Returns the changes
  // this report completes (empty mostly). Unknown tasks are ignored.
  std::vector<StragglerChange> Add(const std::string& task, int64_t step, double compute_s);
  // The tasks named now, in the order of `tasks`.
  std::vector<StragglerInfo> Stragglers() const;
  bool IsStraggler(const std::string& task) const;
  // `task`'s compute time over the median in the last step judged (the metrics'
  // straggler score); 1 before any.
  double Score(const std::string& task) const {
    auto it = scores_.find(task);
    return it == scores_.end() ? 1.0 : it->second;
  }

 private:
  struct Run {
    int64_t slow_steps = 0;
    double sum_compute = 0, sum_median = 0;
    bool named = false;
  };
  std::vector<StragglerChange> Judge(const std::map<std::string, double>& times);

  const std::vector<std::string> tasks_;
  const StragglerSettings settings_;
  std::map<int64_t, std::map<std::string, double>> pending_;  // step -> task -> compute_s
  std::map<std::string, Run> runs_;
  std::map<std::string, double> scores_;  // the last judged step's compute / median
};

}  // namespace ringtrain::coordination
