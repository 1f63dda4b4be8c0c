// The status (the GetStatusResponse that /status.json and `ringtrain status --json` print
// through coordination::StatusToJson: see docs/guide/watching.md) filled from
// what this one process knows: the job's progress as its own steps show it, and its own
// row in "tasks". The chief's page falls back to it when the coordination service's
// GetStatus does not answer. Unknown values are null: the other tasks' rows (known from
// TF_CONFIG) carry only their task name and host.
//
// Threading: thread-safe (one mutex); the updates are O(1) and never block for long.
#pragma once

#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "proto/coordination.pb.h"
#include "train/step_observer.h"

namespace ringtrain::metrics {

class LocalStatus {
 public:
  // `cluster`: every training task (name, host:port) in rank order; empty: only this one.
  LocalStatus(std::string task, std::string host, std::vector<std::pair<std::string, std::string>> cluster = {});

  void OnStep(const train::StepReport& r);
  void OnBackup(int64_t global_step, double unix_time);
  void OnGeneration(int64_t generation);
  // An event line for "events" ("recovery", "failure", ...), at `unix_time`.
  void AddEvent(double unix_time, const std::string& kind, const std::string& message);
  void SetState(const std::string& state);  // registered | running | failed | finished | preempted

  // The status at `now` (seconds since the epoch): ages are relative to it.
  coordination::GetStatusResponse Proto(double now) const;
  std::string Json(double now) const;  // StatusToJson(Proto(now))

 private:
  struct RateSample {
    double unix_time, examples;
  };
  mutable std::mutex mu_;
  const std::string task_, host_;
  const std::vector<std::pair<std::string, std::string>> cluster_;
  std::string state_ = "registered";
  bool has_step_ = false;
  train::StepReport last_;
  std::deque<RateSample> window_;  // the last steps, for images/s and the ETA
  int64_t generation_ = -1;
  int64_t last_backup_step_ = -1;
  double last_backup_time_ = 0;
  std::deque<coordination::StatusEvent> events_;  // the last few, as GetStatus lists them
};

}  // namespace ringtrain::metrics
