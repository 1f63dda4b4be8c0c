// Feeds one task's Prometheus metrics (every name prefixed "ringtrain_", every series
// labelled task="worker:1"), and on the chief the page's history and local status,
// from the training loop (a train::StepObserver) and from the recovery loop's hooks
// (generations, recoveries). The metrics and their types are listed in
// docs/reference/prometheus-metrics.md.
//
// Threading: the StepObserver calls come from the training thread, the hooks from the
// recovery loop's (the same thread), SetStragglerScore from any thread; each returns at
// once (atomics and short critical sections). The JSON and Render calls come from the
// HTTP server's threads. Never changes the training: it only reads the reports.
#pragma once

#include <memory>
#include <string>

#include "common/status.h"
#include "metrics/local_status.h"
#include "metrics/registry.h"
#include "metrics/step_history.h"
#include "train/step_observer.h"

namespace ringtrain::metrics {

class MetricsObserver : public train::StepObserver {
 public:
  // `task`: "worker:1"; `host`: its TF_CONFIG address, for the status row; `cluster`:
  // every training task (name, address), for the other rows of the local status.
  static StatusOr<std::unique_ptr<MetricsObserver>> Create(
      const std::string& task, const std::string& host,
      std::vector<std::pair<std::string, std::string>> cluster = {});

  void OnStep(const train::StepReport& report) override;
  void OnEpoch(const train::EpochResult& result) override;
  void OnBackup(int64_t global_step, double seconds) override;

  // The recovery loop formed generation `generation` (0 first, one more per recovery).
  void OnGeneration(int64_t generation);
  // A generation failed and the run recovers in place; `reason` is a short, fixed word
  // ("unavailable", "deadline_exceeded", ...: RecoveryReason) used as a label value.
  void OnRecovery(const std::string& reason, const std::string& message);
  // This task's compute time over the cluster's median (1 = typical); 1 until set.
  void SetStragglerScore(double score);

  const Registry& registry() const { return registry_; }
  std::string RenderMetrics() const { return registry_.Render(); }
  std::string StatusJson() const;
  std::string HistoryJson() const { return history_.Json(); }

 private:
  MetricsObserver(const std::string& task, const std::string& host,
                  std::vector<std::pair<std::string, std::string>> cluster);
  Status Register();

  const std::string task_;
  Registry registry_;
  StepHistory history_;
  LocalStatus status_;
  Counter *steps_ = nullptr, *examples_ = nullptr, *allreduce_bytes_ = nullptr, *backups_ = nullptr;
  Gauge *loss_ = nullptr, *accuracy_ = nullptr, *learning_rate_ = nullptr, *generation_ = nullptr;
  Gauge *last_step_time_ = nullptr, *straggler_score_ = nullptr;
  Histogram *compute_ = nullptr, *input_wait_ = nullptr, *allreduce_wait_ = nullptr, *backup_seconds_ = nullptr;
};

// The label value for a recovery's cause: the failure's code in lower case
// ("unavailable", "deadline_exceeded", "aborted", ...): a small, fixed set.
std::string RecoveryReason(const Status& why);

}  // namespace ringtrain::metrics
