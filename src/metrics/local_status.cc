#include "metrics/local_status.h"

#include <algorithm>

#include "cluster/step_progress.h"
#include "coordination/status_json.h"

namespace ringtrain::metrics {
namespace {

constexpr size_t kRateWindow = 20;  // steps
constexpr size_t kMaxEvents = 20;

}  // namespace

LocalStatus::LocalStatus(std::string task, std::string host, std::vector<std::pair<std::string, std::string>> cluster)
    : task_(std::move(task)), host_(std::move(host)), cluster_(std::move(cluster)) {}

void LocalStatus::OnStep(const train::StepReport& r) {
  std::lock_guard<std::mutex> lock(mu_);
  last_ = r;
  has_step_ = true;
  state_ = "running";
  window_.push_back({r.unix_time, static_cast<double>(r.examples) * r.num_workers});
  if (window_.size() > kRateWindow) window_.pop_front();
}

void LocalStatus::OnBackup(int64_t global_step, double unix_time) {
  std::lock_guard<std::mutex> lock(mu_);
  last_backup_step_ = global_step;
  last_backup_time_ = unix_time;
}

void LocalStatus::OnGeneration(int64_t generation) {
  std::lock_guard<std::mutex> lock(mu_);
  generation_ = generation;
}

void LocalStatus::AddEvent(double unix_time, const std::string& kind, const std::string& message) {
  std::lock_guard<std::mutex> lock(mu_);
  coordination::StatusEvent e;
  e.set_unix_time(unix_time);
  e.set_kind(kind);
  e.set_task(task_);
  e.set_message(message);
  events_.push_back(std::move(e));
  if (events_.size() > kMaxEvents) events_.pop_front();
}

void LocalStatus::SetState(const std::string& state) {
  std::lock_guard<std::mutex> lock(mu_);
  state_ = state;
}

std::string LocalStatus::Json(double now) const { return coordination::StatusToJson(Proto(now)); }

coordination::GetStatusResponse LocalStatus::Proto(double now) const {
  std::lock_guard<std::mutex> lock(mu_);
  coordination::GetStatusResponse out;
  out.set_unix_time(now);
  coordination::JobProgress* job = out.mutable_job();
  job->set_generation(generation_);
  job->set_eta_s(-1);
  job->set_last_backup_step(last_backup_step_);
  if (last_backup_step_ >= 0) job->set_last_backup_age_s(std::max(0.0, now - last_backup_time_));
  coordination::TaskStatus row;
  row.set_task(task_);
  row.set_state(state_);
  row.set_host(host_);
  row.set_generation(generation_);
  row.set_heartbeat_age_s(-1);  // a task's own view has no heartbeat
  if (has_step_) {
    const train::StepReport& r = last_;
    const int64_t total = static_cast<int64_t>(r.epochs) * r.steps;
    job->set_known(true);
    job->set_epoch(r.epoch);
    job->set_epochs(r.epochs);
    job->set_step(r.step);
    job->set_steps_per_epoch(r.steps);
    job->set_global_step(r.global_step);
    job->set_total_steps(total);
    job->set_loss(r.loss);
    job->set_accuracy(r.accuracy);
    double images_per_sec = 0;
    if (window_.size() >= 2) {
      const double span = window_.back().unix_time - window_.front().unix_time;
      double examples = 0;
      for (size_t i = 1; i < window_.size(); ++i) examples += window_[i].examples;
      if (span > 0) {
        images_per_sec = examples / span;
        job->set_images_per_sec(images_per_sec);
        const double step_s = span / static_cast<double>(window_.size() - 1);
        job->set_eta_s(static_cast<double>(std::max<int64_t>(0, total - r.global_step)) * step_s);
      }
    }
    coordination::TaskProgress* p = row.mutable_progress();
    cluster::FillStepProgress(r, p);
    p->set_images_per_sec(images_per_sec);
    p->set_generation(generation_);
  }
  for (const coordination::StatusEvent& e : events_) *out.add_events() = e;
  // This task first when TF_CONFIG's training tasks do not name it, else in their order;
  // the other tasks are known from TF_CONFIG by name and address only.
  const bool listed = std::any_of(cluster_.begin(), cluster_.end(), [this](const auto& t) { return t.first == task_; });
  if (!listed) *out.add_tasks() = row;
  for (const auto& [name, host] : cluster_) {
    if (name == task_) {
      *out.add_tasks() = row;
      continue;
    }
    coordination::TaskStatus* other = out.add_tasks();
    other->set_task(name);
    other->set_host(host);
    other->set_generation(-1);
    other->set_heartbeat_age_s(-1);
  }
  return out;
}

}  // namespace ringtrain::metrics
