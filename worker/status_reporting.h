// What `ringtrain worker` adds for `ringtrain status` and straggler detection: a
// progress reporter watching the trainer's steps whose newest figures go with every
// heartbeat, and the fault-injection delay of RINGTRAIN_FAULT_COMPUTE_DELAY_MS.
// Declare it before the session, so that it outlives the heartbeat thread that reads it.
#pragma once

#include <string>

#include "cluster/progress_reporter.h"
#include "cluster/session.h"
#include "config/settings.h"
#include "recovery/training_run.h"
#include "train/trainer.h"

namespace ringtrain::cli {

class StatusReporting {
 public:
  // Registers the reporter with `options` (before the trainer is created).
  StatusReporting(const config::Settings& settings, train::TrainerOptions* options);
  // The heartbeats of `session` carry the reporter's progress (a ClusterSession; a
  // local session has no chief and is left alone).
  void Attach(cluster::Session* session);
  // What later heartbeats report as this task's state: "running", "finished" or
  // "preempted" (the chief records a preemption event). Any thread; returns at once.
  void SetState(const std::string& state) { reporter_.SetState(state); }
  // This task's own events (a backup fallback) go to the chief with the next progress.
  void Attach(recovery::RunOptions* run_options) {
    run_options->on_event = [this](const std::string& kind, const std::string& message) {
      reporter_.AddEvent(kind, message);
    };
  }

 private:
  cluster::ProgressReporter reporter_;
};

}  // namespace ringtrain::cli
