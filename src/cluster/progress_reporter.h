// What a task tells the chief of its training with each heartbeat (`ringtrain status`,
// straggler detection): a StepObserver that keeps the newest step's figures and the
// compute times of the steps since the last heartbeat (the newest kMaxRecentSteps),
// and hands them to the heartbeat thread (coordination::ProgressSource). The bound is
// generous because the chief judges a step only once every rank has reported it: with
// steps of a few milliseconds and the default 1 s heartbeat, a short window would leave
// the ranks' windows disjoint and nothing judged.
//
// Threading: OnStep/OnBackup run on the training thread, Fill on the heartbeat thread;
// both only copy under mu_, so the training thread never waits on the network.
#pragma once

#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <utility>

#include "coordination/coordination_client.h"
#include "proto/coordination.pb.h"
#include "train/step_observer.h"

namespace ringtrain::cluster {

class ProgressReporter final : public train::StepObserver {
 public:
  static constexpr size_t kMaxRecentSteps = 512;  // about 8 KB per heartbeat at most
  // Steps over which images/s and steps/s are measured.
  static constexpr size_t kRateWindow = 20;

  void OnStep(const train::StepReport& report) override;
  void OnBackup(int64_t global_step, double seconds) override;
  // "running" (the default once a step is done), "finished" or "preempted".
  void SetState(const std::string& state);
  // An event of this task the chief should list (kind "backup_fallback": a corrupted
  // backup skipped); sent once, with the next progress. At most kMaxEvents wait.
  void AddEvent(const std::string& kind, const std::string& message);
  static constexpr size_t kMaxEvents = 16;

  // coordination::ProgressSource: false before the first step; else fills `out` and
  // takes the recent step times (each is sent once).
  bool Fill(coordination::TaskProgress* out);
  coordination::ProgressSource Source() {
    return [this](coordination::TaskProgress* out) { return Fill(out); };
  }

 private:
  std::mutex mu_;
  bool have_step_ = false;                              // guarded by mu_
  train::StepReport last_;                              // guarded by mu_
  std::deque<std::pair<int64_t, double>> recent_;       // (global step, compute_s); guarded by mu_
  std::deque<std::pair<int64_t, double>> window_;       // (examples, seconds) of the last steps; guarded by mu_
  int64_t backup_step_ = -1;                            // guarded by mu_
  double backup_unix_time_ = 0;                         // guarded by mu_
  std::string state_ = "running";                       // guarded by mu_
  std::deque<coordination::StatusEvent> events_;        // not yet sent; guarded by mu_
};

}  // namespace ringtrain::cluster
