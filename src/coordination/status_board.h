// What the chief knows of the run beyond membership, for GetStatus (`ringtrain
// status`, the live page): each task's newest progress report (sent with its
// heartbeat), the straggler detector fed by the reports' step times, and the last
// events (failures, recoveries, preemptions, stragglers) in a bounded ring.
//
// Threading: not thread-safe; CoordinationServiceImpl calls it under its mutex. Nothing
// blocks; the only output is one log line per straggler change. Time is passed in
// (steady for ages, Unix for event stamps) so that tests need no sleeps.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "coordination/service_state.h"
#include "coordination/straggler_detector.h"
#include "proto/coordination.pb.h"

namespace ringtrain::coordination {

class StatusBoard {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr size_t kMaxEvents = 50;

  // `tasks` in rank order; `hosts[i]` is tasks[i]'s TF_CONFIG "host:port" (may be
  // shorter: unknown hosts are "").
  StatusBoard(std::vector<std::string> tasks, std::vector<std::string> hosts, StragglerSettings stragglers);

  // A heartbeat of `task` carried `progress`: kept as its newest; its step times feed
  // the straggler detector (named and recovered stragglers are logged and become events).
  void OnProgress(const std::string& task, const TaskProgress& progress, double unix_now);
  // StragglerDetector::Score of `task` (1 before any step was judged).
  double StragglerScore(const std::string& task) const { return detector_.Score(task); }
  // Failures, recoveries and other events, newest last; the oldest beyond kMaxEvents is dropped.
  void AddEvent(const std::string& kind, const std::string& task, const std::string& message, double unix_now);
  // Turns changes of the generation into events: a broken generation starts a recovery;
  // the next formed one ends it ("recovery" with how long it took).
  void OnGeneration(int64_t generation, bool broken, const std::string& broken_reason, double unix_now);
  // The whole answer to GetStatus.
  void Fill(const ServiceState& state, Clock::time_point now, double unix_now, GetStatusResponse* out) const;

 private:
  const std::vector<std::string> tasks_;
  std::map<std::string, std::string> hosts_;
  StragglerDetector detector_;
  std::map<std::string, TaskProgress> progress_;  // newest report per task, recent_steps cleared
  std::deque<StatusEvent> events_;
  int64_t seen_generation_ = -1;
  bool seen_broken_ = false;
  double broken_at_ = 0;  // Unix time the current generation was seen broken
  std::string broken_reason_;
};

}  // namespace ringtrain::coordination
