#include "cluster/progress_reporter.h"

#include <chrono>

#include "cluster/step_progress.h"
#include "proto/coordination.pb.h"

namespace ringtrain::cluster {

void ProgressReporter::OnStep(const train::StepReport& report) {
  std::lock_guard<std::mutex> lock(mu_);
  have_step_ = true;
  last_ = report;
  recent_.emplace_back(report.global_step, report.compute_seconds);
  while (recent_.size() > kMaxRecentSteps) recent_.pop_front();
  window_.emplace_back(report.examples, report.seconds);
  while (window_.size() > kRateWindow) window_.pop_front();
}

void ProgressReporter::OnBackup(int64_t global_step, double seconds) {
  (void)seconds;
  std::lock_guard<std::mutex> lock(mu_);
  backup_step_ = global_step;
  backup_unix_time_ = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

void ProgressReporter::SetState(const std::string& state) {
  std::lock_guard<std::mutex> lock(mu_);
  state_ = state;
}

void ProgressReporter::AddEvent(const std::string& kind, const std::string& message) {
  coordination::StatusEvent e;
  e.set_unix_time(std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count());
  e.set_kind(kind);
  e.set_message(message);
  std::lock_guard<std::mutex> lock(mu_);
  events_.push_back(std::move(e));
  while (events_.size() > kMaxEvents) events_.pop_front();
}

bool ProgressReporter::Fill(coordination::TaskProgress* out) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!have_step_) return false;
  FillStepProgress(last_, out);
  int64_t examples = 0;
  double seconds = 0;
  for (const auto& [n, s] : window_) {
    examples += n;
    seconds += s;
  }
  out->set_images_per_sec(seconds > 0 ? static_cast<double>(examples) / seconds : 0.0);
  out->set_steps_per_sec(seconds > 0 ? static_cast<double>(window_.size()) / seconds : 0.0);
  out->set_last_backup_step(backup_step_);
  out->set_last_backup_unix_time(backup_unix_time_);
  out->set_state(state_);
  for (const auto& [step, compute] : recent_) {
    coordination::StepTime* t = out->add_recent_steps();
    t->set_step(step);
    t->set_compute_s(compute);
  }
  recent_.clear();
  for (auto& e : events_) *out->add_events() = std::move(e);
  events_.clear();
  return true;
}

}  // namespace ringtrain::cluster
