#include "coordination/status_board.h"

#include <algorithm>
#include <cstdio>
#include <utility>

#include "common/logging.h"

namespace ringtrain::coordination {

StatusBoard::StatusBoard(std::vector<std::string> tasks, std::vector<std::string> hosts, StragglerSettings stragglers)
    : tasks_(std::move(tasks)), detector_(tasks_, stragglers) {
  for (size_t i = 0; i < tasks_.size() && i < hosts.size(); ++i) hosts_[tasks_[i]] = hosts[i];
}

void StatusBoard::OnProgress(const std::string& task, const TaskProgress& progress, double unix_now) {
  if (std::find(tasks_.begin(), tasks_.end(), task) == tasks_.end()) return;
  for (const StepTime& t : progress.recent_steps()) {
    for (const StragglerChange& c : detector_.Add(task, t.step(), t.compute_s())) {
      const std::string line = c.Line();
      RT_LOG(WARNING) << line;
      AddEvent("straggler", c.info.task, line, unix_now);
    }
  }
  for (const StatusEvent& e : progress.events()) AddEvent(e.kind(), task, e.message(), e.unix_time());
  TaskProgress& kept = progress_[task];
  const bool was_preempted = kept.state() == "preempted";
  kept = progress;
  kept.clear_recent_steps();
  kept.clear_events();
  if (kept.state() == "preempted" && !was_preempted) {
    AddEvent("preemption", task, task + " was preempted at step " + std::to_string(kept.global_step()), unix_now);
  }
}

void StatusBoard::AddEvent(const std::string& kind, const std::string& task, const std::string& message,
                           double unix_now) {
  StatusEvent e;
  e.set_unix_time(unix_now);
  e.set_kind(kind);
  e.set_task(task);
  e.set_message(message);
  events_.push_back(std::move(e));
  while (events_.size() > kMaxEvents) events_.pop_front();
}

void StatusBoard::OnGeneration(int64_t generation, bool broken, const std::string& broken_reason, double unix_now) {
  if (broken && !seen_broken_) {
    broken_at_ = unix_now;
    broken_reason_ = broken_reason;
  }
  if (generation > seen_generation_ && seen_broken_ && !broken) {
    char took[32];
    std::snprintf(took, sizeof(took), "%.1f", unix_now - broken_at_);
    AddEvent("recovery", "",
             "recovered in place: generation " + std::to_string(generation) + " formed " + took +
                 " s after generation " + std::to_string(seen_generation_) + " broke (" + broken_reason_ + ")",
             unix_now);
  }
  seen_generation_ = std::max(seen_generation_, generation);
  seen_broken_ = broken;
}

namespace {

std::string StateOf(const ServiceState::TaskView& v, const TaskProgress* p) {
  if (!v.registered) return "";
  if (v.failed) return "failed";
  if (p != nullptr && p->state() == "preempted") return "preempted";
  if (v.shut_down || (p != nullptr && p->state() == "finished")) return "finished";
  if (p != nullptr && p->global_step() > 0) return "running";
  return "registered";
}

}  // namespace

void StatusBoard::Fill(const ServiceState& state, Clock::time_point now, double unix_now,
                       GetStatusResponse* out) const {
  out->set_unix_time(unix_now);
  const TaskProgress* lead = nullptr;  // the most advanced task: the job's position
  double images_per_sec = 0, loss = 0, accuracy = 0;
  int reporting = 0;
  int64_t backup_step = -1;
  double backup_time = 0;
  for (const std::string& task : tasks_) {
    const ServiceState::TaskView v = state.View(task);
    auto it = progress_.find(task);
    const TaskProgress* p = it == progress_.end() ? nullptr : &it->second;
    TaskStatus* t = out->add_tasks();
    t->set_task(task);
    t->set_state(StateOf(v, p));
    auto host = hosts_.find(task);
    if (host != hosts_.end()) t->set_host(host->second);
    t->set_incarnation(v.incarnation);
    t->set_generation(v.member_generation);
    t->set_heartbeat_age_s(v.last_heartbeat ? std::chrono::duration<double>(now - *v.last_heartbeat).count() : -1.0);
    t->set_straggler(detector_.IsStraggler(task));
    t->set_failure_reason(v.failure_reason);
    t->set_hosted_by(v.hosted_by);
    if (p == nullptr) continue;
    *t->mutable_progress() = *p;
    if (lead == nullptr || p->global_step() > lead->global_step()) lead = p;
    if (t->state() == "running") images_per_sec += p->images_per_sec();
    loss += p->loss();
    accuracy += p->accuracy();
    ++reporting;
    if (p->last_backup_step() > backup_step) {
      backup_step = p->last_backup_step();
      backup_time = p->last_backup_unix_time();
    }
  }
  JobProgress* job = out->mutable_job();
  job->set_generation(state.generation());
  job->set_last_backup_step(backup_step);
  job->set_last_backup_age_s(backup_step >= 0 ? std::max(0.0, unix_now - backup_time) : -1.0);
  job->set_eta_s(-1);
  if (lead != nullptr) {
    job->set_known(true);
    job->set_epoch(lead->epoch());
    job->set_epochs(lead->epochs());
    job->set_step(lead->step());
    job->set_steps_per_epoch(lead->steps_per_epoch());
    job->set_global_step(lead->global_step());
    const int64_t total = int64_t{lead->epochs()} * lead->steps_per_epoch();
    job->set_total_steps(total);
    job->set_images_per_sec(images_per_sec);
    if (lead->steps_per_sec() > 0) {
      job->set_eta_s(static_cast<double>(std::max<int64_t>(0, total - lead->global_step())) / lead->steps_per_sec());
    }
    job->set_loss(loss / reporting);
    job->set_accuracy(accuracy / reporting);
  }
  for (const StatusEvent& e : events_) *out->add_events() = e;
  for (const StragglerInfo& s : detector_.Stragglers()) {
    Straggler* o = out->add_stragglers();
    o->set_task(s.task);
    o->set_compute_s(s.compute_s);
    o->set_median_compute_s(s.median_compute_s);
    o->set_steps(s.steps);
  }
}

}  // namespace ringtrain::coordination
