#include "daemon/job_board.h"

#include <utility>

#include <nlohmann/json.hpp>

#include "common/exit_policy.h"
#include "common/logging.h"

namespace ringtrain::daemon {

using jobqueue::JobRecord;
using jobqueue::JobState;

JobBoard::JobBoard(std::unique_ptr<jobqueue::JobQueue> queue, BoardOptions options)
    : queue_(std::move(queue)), options_(std::move(options)) {
  for (const std::string& t : options_.tasks) daemons_[t];
}

StatusOr<std::unique_ptr<JobBoard>> JobBoard::Make(std::unique_ptr<jobqueue::JobQueue> queue, BoardOptions options,
                                                   double now_s) {
  std::unique_ptr<JobBoard> board(new JobBoard(std::move(queue), std::move(options)));
  for (const JobRecord& j : board->queue_->List()) {
    if (j.state != JobState::kRunning) continue;
    RT_ASSIGN_OR_RETURN(std::optional<JobRecord> resumed, board->queue_->StartNext(now_s));
    board->current_ = std::move(resumed);
    board->stopping_ = board->current_->cancel_requested;
    RT_LOG(INFO) << "resuming " << board->current_->Label() << " (" << board->current_->name << "), attempt "
                 << board->current_->attempts;
    break;
  }
  return board;
}

StatusOr<int64_t> JobBoard::Submit(const std::string& name, const std::string& job_text, double now_s) {
  std::lock_guard<std::mutex> lock(mu_);
  RT_ASSIGN_OR_RETURN(int64_t id, queue_->Submit(name, job_text, now_s));
  RT_LOG(INFO) << "job-" << id << " (" << name << ") queued";
  ++changes_;
  return id;
}

StatusOr<JobState> JobBoard::Cancel(int64_t id, double now_s) {
  std::lock_guard<std::mutex> lock(mu_);
  RT_ASSIGN_OR_RETURN(JobState state, queue_->Cancel(id, now_s));
  if (current_ && current_->id == id) {
    current_->cancel_requested = true;
    stopping_ = true;
    RT_LOG(INFO) << current_->Label() << ": cancel asked for; the daemons stop it";
  } else {
    RT_LOG(INFO) << "job-" << id << " cancelled before it started";
  }
  return state;
}

uint64_t JobBoard::changes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return changes_;
}

int64_t JobBoard::current_job() const {
  std::lock_guard<std::mutex> lock(mu_);
  return current_ ? current_->id : 0;
}

bool JobBoard::PresentLocked(const Daemon& d, SteadyTime now) const {
  return d.seen && now - d.last_poll < options_.daemon_timeout;
}

StatusOr<Assignment> JobBoard::Poll(const std::string& task, int64_t running_job,
                                    const std::vector<ChildOutcome>& outcomes, SteadyTime now, double now_s) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = daemons_.find(task);
  if (it == daemons_.end()) {
    return InvalidArgumentError("'" + task + "' is not a task of this cluster's TF_CONFIG");
  }
  if (!it->second.seen) RT_LOG(INFO) << "daemon " << task << " is here";
  it->second.seen = true;
  it->second.last_poll = now;
  it->second.running_job = running_job;
  if (current_) {
    for (const ChildOutcome& o : outcomes) {
      if (o.job_id != current_->id || outcomes_.count(task) > 0) continue;
      outcomes_[task] = o;
      RT_LOG(INFO) << current_->Label() << ": " << task << "'s child exited with code " << o.exit_code;
      if (o.exit_code != kExitOk && o.exit_code != kExitPreempted && !stopping_) {
        stopping_ = true;
        RT_LOG(INFO) << current_->Label() << " failed on " << task << "; the other daemons stop it";
      }
    }
  }
  RT_RETURN_IF_ERROR(AdvanceLocked(now, now_s));
  return AssignmentLocked();
}

Status JobBoard::AdvanceLocked(SteadyTime now, double now_s) {
  if (current_) {
    const bool chief_ended = outcomes_.count(options_.chief_task) > 0;
    for (const auto& [task, d] : daemons_) {
      if (outcomes_.count(task) > 0) continue;
      if (PresentLocked(d, now) || !(stopping_ || chief_ended)) return Status::Ok();  // still running
    }
    RT_RETURN_IF_ERROR(EndCurrentLocked(now_s));
    ++changes_;
  }
  for (const auto& [task, d] : daemons_) {
    if (!PresentLocked(d, now) || d.running_job != 0) return Status::Ok();
  }
  RT_ASSIGN_OR_RETURN(std::optional<JobRecord> next, queue_->StartNext(now_s));
  if (next) {
    current_ = std::move(next);
    outcomes_.clear();
    stopping_ = false;
    ++changes_;
    RT_LOG(INFO) << current_->Label() << " (" << current_->name << ") started on " << daemons_.size() << " daemons";
  }
  return Status::Ok();
}

Status JobBoard::EndCurrentLocked(double now_s) {
  const JobRecord& job = *current_;
  if (job.cancel_requested) {
    RT_RETURN_IF_ERROR(queue_->MarkCancelled(job.id, now_s));
    RT_LOG(INFO) << job.Label() << " cancelled";
  } else {
    // The tasks' codes in the cluster's order (the chief's first), failures ranked.
    std::vector<int> codes;
    std::vector<const std::pair<const std::string, ChildOutcome>*> failed;
    for (const std::string& t : options_.tasks) {
      auto o = outcomes_.find(t);
      if (o == outcomes_.end()) continue;
      if (o->second.exit_code != kExitOk) {
        codes.push_back(o->second.exit_code);
        failed.push_back(&*o);
      }
    }
    const int root = RootCauseExit(codes);
    if (root == kExitOk) {
      nlohmann::json metrics;  // null when the chief's child wrote none
      auto chief = outcomes_.find(options_.chief_task);
      if (chief != outcomes_.end() && !chief->second.metrics_json.empty()) {
        metrics = nlohmann::json::parse(chief->second.metrics_json, nullptr, /*allow_exceptions=*/false);
        if (metrics.is_discarded()) metrics = nullptr;
      }
      RT_RETURN_IF_ERROR(queue_->Finish(job.id, metrics, now_s));
      RT_LOG(INFO) << job.Label() << " finished";
    } else {
      std::string error;
      for (const auto* f : failed) {
        if (f->second.exit_code != root) continue;
        error = f->first + " exited with code " + std::to_string(root) + " (" + ExitCodeMeaning(root) + ")" +
                (f->second.error.empty() ? std::string() : ": " + f->second.error);
        break;
      }
      if (error.empty()) error = "a daemon was lost while the job was being stopped";
      RT_RETURN_IF_ERROR(queue_->Fail(job.id, error, now_s));
      RT_LOG(INFO) << job.Label() << " failed: " << error;
    }
  }
  current_.reset();
  outcomes_.clear();
  stopping_ = false;
  return Status::Ok();
}

Assignment JobBoard::AssignmentLocked() const {
  Assignment a;
  if (!current_) return a;
  a.job_id = current_->id;
  a.job_text = current_->job_text;
  a.attempt = current_->attempts;
  a.stop = stopping_;
  return a;
}

}  // namespace ringtrain::daemon
