#include "metrics/metrics_observer.h"

#include <cctype>
#include <chrono>

#include "train/trainer.h"

namespace ringtrain::metrics {
namespace {

double UnixNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// 0.5 ms .. ~16 s, doubling: a step of a small CPU job to a large GPU model's.
std::vector<double> StepBuckets() { return ExponentialBuckets(0.0005, 2, 16); }
// 1 ms .. ~65 s: a backup is a copy to host memory plus, on the chief, a hand-off.
std::vector<double> BackupBuckets() { return ExponentialBuckets(0.001, 4, 9); }

constexpr char kRecoveriesHelp[] = "Failed generations this task recovered from in place, by the failure's code.";

}  // namespace

std::string RecoveryReason(const Status& why) {
  std::string s = CodeName(why.code());
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

MetricsObserver::MetricsObserver(const std::string& task, const std::string& host,
                                 std::vector<std::pair<std::string, std::string>> cluster)
    : task_(task), status_(task, host, std::move(cluster)) {}

StatusOr<std::unique_ptr<MetricsObserver>> MetricsObserver::Create(
    const std::string& task, const std::string& host, std::vector<std::pair<std::string, std::string>> cluster) {
  std::unique_ptr<MetricsObserver> o(new MetricsObserver(task, host, std::move(cluster)));
  RT_RETURN_IF_ERROR(o->Register());
  return o;
}

Status MetricsObserver::Register() {
  const Labels t = {{"task", task_}};
  Registry& r = registry_;
  RT_ASSIGN_OR_RETURN(steps_, r.GetCounter("ringtrain_steps_total", "Training steps this task completed.", t));
  RT_ASSIGN_OR_RETURN(examples_,
                      r.GetCounter("ringtrain_examples_total", "Training examples this task trained on.", t));
  RT_ASSIGN_OR_RETURN(loss_, r.GetGauge("ringtrain_loss", "This task's batch loss of its last step.", t));
  RT_ASSIGN_OR_RETURN(accuracy_,
                      r.GetGauge("ringtrain_accuracy", "This task's batch accuracy of its last step (0 without one).", t));
  RT_ASSIGN_OR_RETURN(learning_rate_, r.GetGauge("ringtrain_learning_rate", "The learning rate of the last step.", t));
  const char* phase_help = "Wall time of a step by phase: compute (forward, backward, update), input_wait (waiting "
                           "for the input pipeline), allreduce_wait (waiting for the gradients' all-reduce).";
  auto phase = [&](const char* p) {
    return r.GetHistogram("ringtrain_step_phase_seconds", phase_help, StepBuckets(), {{"task", task_}, {"phase", p}});
  };
  RT_ASSIGN_OR_RETURN(compute_, phase("compute"));
  RT_ASSIGN_OR_RETURN(input_wait_, phase("input_wait"));
  RT_ASSIGN_OR_RETURN(allreduce_wait_, phase("allreduce_wait"));
  RT_ASSIGN_OR_RETURN(allreduce_bytes_, r.GetCounter("ringtrain_allreduce_bytes_total",
                                                     "Gradient bytes this task all-reduced.", t));
  RT_ASSIGN_OR_RETURN(generation_, r.GetGauge("ringtrain_generation",
                                              "The cluster generation this task trains in (-1 before the first).", t));
  generation_->Set(-1);
  // The usual causes start at 0 (Prometheus' advice: a series that appears only with its
  // first increment hides that increment from rate()); another appears with its first.
  for (const char* reason : {"unavailable", "deadline_exceeded", "aborted"}) {
    RT_ASSIGN_OR_RETURN(Counter * c, r.GetCounter("ringtrain_recoveries_total", kRecoveriesHelp,
                                                  {{"task", task_}, {"reason", reason}}));
    (void)c;
  }
  RT_ASSIGN_OR_RETURN(backups_, r.GetCounter("ringtrain_backups_total",
                                             "Backup points this task took (the in-memory state a recovery rolls "
                                             "back to; the chief also writes it to backup_dir when backups are on).",
                                             t));
  RT_ASSIGN_OR_RETURN(backup_seconds_,
                      r.GetHistogram("ringtrain_backup_seconds",
                                     "Training-thread seconds a backup point took (snapshot and hand-off).",
                                     BackupBuckets(), t));
  RT_ASSIGN_OR_RETURN(last_step_time_, r.GetGauge("ringtrain_last_step_timestamp_seconds",
                                                  "When this task completed its last step (Unix time).", t));
  RT_ASSIGN_OR_RETURN(straggler_score_,
                      r.GetGauge("ringtrain_straggler_score",
                                 "This task's step compute time over the cluster's median (1 = typical).", t));
  straggler_score_->Set(1);
  return Status::Ok();
}

void MetricsObserver::OnStep(const train::StepReport& report) {
  steps_->Add(1);
  examples_->Add(static_cast<double>(report.examples));
  loss_->Set(report.loss);
  accuracy_->Set(report.accuracy);
  learning_rate_->Set(report.learning_rate);
  compute_->Observe(report.compute_seconds);
  input_wait_->Observe(report.input_wait_seconds);
  allreduce_wait_->Observe(report.comm_wait_seconds);
  allreduce_bytes_->Add(static_cast<double>(report.allreduced_bytes));
  last_step_time_->Set(report.unix_time);
  history_.AddStep(report.global_step, report.loss, report.accuracy,
                   static_cast<double>(report.examples) * report.num_workers, report.seconds);
  status_.OnStep(report);
}

void MetricsObserver::OnEpoch(const train::EpochResult& r) {
  history_.AddEpoch(r.epoch, r.loss, r.accuracy, r.images_per_sec, r.has_val, r.val_loss, r.val_accuracy);
}

void MetricsObserver::OnBackup(int64_t global_step, double seconds) {
  backups_->Add(1);
  backup_seconds_->Observe(seconds);
  status_.OnBackup(global_step, UnixNow());
}

void MetricsObserver::OnGeneration(int64_t generation) {
  generation_->Set(static_cast<double>(generation));
  status_.OnGeneration(generation);
}

void MetricsObserver::OnRecovery(const std::string& reason, const std::string& message) {
  auto c = registry_.GetCounter("ringtrain_recoveries_total", kRecoveriesHelp, {{"task", task_}, {"reason", reason}});
  if (c.ok()) (*c)->Add(1);
  status_.AddEvent(UnixNow(), "recovery", message);
}

void MetricsObserver::SetStragglerScore(double score) { straggler_score_->Set(score); }

std::string MetricsObserver::StatusJson() const { return status_.Json(UnixNow()); }

}  // namespace ringtrain::metrics
