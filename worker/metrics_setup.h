// Wiring of src/metrics into `ringtrain worker` and `launch`: --metrics_port P (or
// RINGTRAIN_METRICS_PORT; 0 = off) serves /metrics on the task's own TF_CONFIG host
// (loopback when it trains alone), and on the chief also the live page, /status.json
// and /history.json. Main thread only.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "cluster/cluster_session.h"
#include "common/status.h"
#include "config/settings.h"
#include "config/tf_config.h"
#include "flags.h"
#include "metrics/http_server.h"
#include "metrics/metrics_observer.h"
#include "recovery/training_run.h"
#include "train/trainer.h"

namespace ringtrain::cli {

class TaskMetrics {
 public:
  ~TaskMetrics();  // stops the server before the observer goes; never throws

  metrics::MetricsObserver* observer() { return observer_.get(); }
  // The chief's /status.json body: this process's view until the cluster-wide status
  // (GetStatus) is plugged in here.
  void SetStatusSource(std::function<std::string()> source);
  // Where each scrape reads this task's straggler score (the chief's judgement, sent
  // back with every heartbeat); unset: the observer's own value (1).
  void SetStragglerScoreSource(std::function<double()> source);

 private:
  friend StatusOr<std::unique_ptr<TaskMetrics>> StartMetrics(const Flags&, const config::Settings&,
                                                              const config::ClusterSpec&, bool);
  std::unique_ptr<metrics::MetricsObserver> observer_;
  std::mutex status_mu_;
  std::function<std::string()> status_source_;  // guarded by status_mu_; read by server threads
  std::function<double()> score_source_;        // guarded by status_mu_
  std::unique_ptr<metrics::HttpServer> server_;                   // declared last: stopped first
};

// Null (and OK) when metrics are off. A port that cannot be bound is UNAVAILABLE about
// kCluster (exit 4), a bad --metrics_port INVALID_ARGUMENT about kConfig (exit 2).
StatusOr<std::unique_ptr<TaskMetrics>> StartMetrics(const Flags& flags, const config::Settings& settings,
                                                    const config::ClusterSpec& spec, bool alone);
// Adds the observer and the recovery hooks; nothing when `metrics` is null.
void AttachMetrics(TaskMetrics* metrics, train::TrainerOptions* trainer_options);
void AttachMetrics(TaskMetrics* metrics, recovery::RunOptions* run_options);

// The chief's page shows the cluster-wide status: its /status.json asks its own
// coordination service (GetStatus, authenticated like any caller), falling back to this
// process's view when that fails.
void ServeClusterStatus(TaskMetrics* metrics, const config::ClusterSpec& spec, const cluster::SessionSecurity& security);

// launch --metrics_port P: task i gets "--metrics_port P+i".
std::function<std::vector<std::string>(int index)> MetricsPortArgs(int base_port);

}  // namespace ringtrain::cli
