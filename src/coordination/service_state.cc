#include "coordination/service_state.h"

#include <algorithm>
#include <utility>

#include "common/logging.h"
#include "coordination/job_diff.h"

namespace ringtrain::coordination {

std::string JoinTasks(const std::vector<std::string>& tasks) {
  std::string out;
  for (const auto& t : tasks) {
    if (!out.empty()) out += ", ";
    out += t;
  }
  return out;
}

ServiceState::ServiceState(const std::vector<std::string>& expected_tasks, std::string reference_job_json,
                           std::chrono::milliseconds heartbeat_timeout)
    : expected_(expected_tasks.begin(), expected_tasks.end()),
      reference_job_json_(std::move(reference_job_json)),
      heartbeat_timeout_(heartbeat_timeout) {
  for (const auto& t : expected_) tasks_[t];
}

ServiceState::TaskState* ServiceState::Find(const std::string& task) {
  auto it = tasks_.find(task);
  return it == tasks_.end() ? nullptr : &it->second;
}

const ServiceState::TaskState* ServiceState::Find(const std::string& task) const {
  auto it = tasks_.find(task);
  return it == tasks_.end() ? nullptr : &it->second;
}

Status ServiceState::CheckKnownTask(const std::string& task) const {
  if (expected_.count(task)) return Status::Ok();
  return InvalidArgumentError("task '" + task + "' is not in this cluster's TF_CONFIG (its tasks are: " +
                              JoinTasks({expected_.begin(), expected_.end()}) +
                              "); give every task the same TF_CONFIG cluster");
}

Status ServiceState::Register(const std::string& task, uint64_t incarnation, const std::string& job_json) {
  RT_RETURN_IF_ERROR(CheckKnownTask(task));
  if (!reference_job_json_.empty()) RT_RETURN_IF_ERROR(CompareJobs(reference_job_json_, job_json, task));
  TaskState& s = *Find(task);
  if (s.registered && s.incarnation == incarnation) return Status::Ok();
  if (s.registered) {
    // INFO: a restarted task is expected; the console has the recovery's own lines.
    RT_LOG(INFO) << task << " registered again with a new incarnation (" << s.incarnation << " -> "
                 << incarnation << "): the process restarted";
    s.last_heartbeat.reset();
    s.shut_down = false;
    if (s.failed) {
      s.failed = false;
      s.failure_reason.clear();
      failed_.erase(std::remove_if(failed_.begin(), failed_.end(),
                                   [&](const FailedTaskInfo& f) { return f.task == task; }),
                    failed_.end());
    }
    arrivals_.erase(task);
    if (IsCurrentMember(s)) BreakGeneration(task + " restarted (new incarnation); its old process is gone");
    // The new process has been in no generation yet; it arrives with last_generation -1.
    s.member_generation = -1;
  }
  s.registered = true;
  s.incarnation = incarnation;
  s.absent_since.reset();
  s.hosted_by.clear();
  if (auto d = directed_.find(task); d != directed_.end()) {
    s.hosted_by = d->second;
    directed_.erase(d);
    RT_LOG(INFO) << task << " is hosted by " << s.hosted_by << "'s process (elastic)";
  }
  size_t missing = MissingRegistrations().size();
  RT_LOG(INFO) << task << " registered (" << expected_.size() - missing << " of " << expected_.size() << " tasks)";
  return Status::Ok();
}

std::vector<std::string> ServiceState::MissingRegistrations() const {
  std::vector<std::string> missing;
  for (const auto& [name, s] : tasks_) {
    if (!s.registered) missing.push_back(name);
  }
  return missing;
}

void ServiceState::KvSet(const std::string& key, const std::string& value) { kv_[key] = value; }

std::optional<std::string> ServiceState::KvGet(const std::string& key) const {
  auto it = kv_.find(key);
  if (it == kv_.end()) return std::nullopt;
  return it->second;
}

Status ServiceState::ArriveAtBarrier(const std::string& name, const std::string& task) {
  RT_RETURN_IF_ERROR(CheckKnownTask(task));
  barriers_[name].insert(task);
  return Status::Ok();
}

std::vector<std::string> ServiceState::MissingAtBarrier(const std::string& name) const {
  auto it = barriers_.find(name);
  std::vector<std::string> missing;
  for (const auto& t : expected_) {
    if (it == barriers_.end() || !it->second.count(t)) missing.push_back(t);
  }
  return missing;
}

Status ServiceState::Heartbeat(const std::string& task, uint64_t incarnation, Clock::time_point now) {
  RT_RETURN_IF_ERROR(CheckKnownTask(task));
  TaskState& s = *Find(task);
  if (!s.registered) {
    return FailedPreconditionError(task + " sent a heartbeat before registering; call Register first");
  }
  if (s.incarnation != incarnation) {
    return AbortedError(task + " (incarnation " + std::to_string(incarnation) +
                        ") was replaced by a restarted process (incarnation " + std::to_string(s.incarnation) +
                        "); this process should exit");
  }
  if (s.failed) {
    return AbortedError(task + " (incarnation " + std::to_string(incarnation) + ") was declared failed: " +
                        s.failure_reason + "; this process must exit and be restarted");
  }
  if (!s.shut_down) s.last_heartbeat = now;
  return Status::Ok();
}

std::vector<FailedTaskInfo> ServiceState::DetectFailures(Clock::time_point now) {
  std::vector<FailedTaskInfo> newly_failed;
  for (auto& [name, s] : tasks_) {
    if (s.failed || s.shut_down || !s.last_heartbeat) continue;
    auto silent = std::chrono::duration_cast<std::chrono::milliseconds>(now - *s.last_heartbeat);
    if (silent <= heartbeat_timeout_) continue;
    s.failed = true;
    FailedTaskInfo info{name, "no heartbeat from " + name + " for " + std::to_string(silent.count()) +
                                  " ms (heartbeat timeout " + std::to_string(heartbeat_timeout_.count()) +
                                  " ms); the process crashed, hung or lost its network"};
    s.failure_reason = info.reason;
    s.absent_since = now;
    arrivals_.erase(name);
    if (IsCurrentMember(s)) BreakGeneration(info.reason);
    failed_.push_back(info);
    newly_failed.push_back(std::move(info));
  }
  return newly_failed;
}

void ServiceState::SetElastic(const ElasticPolicy& policy, const std::vector<std::string>& rank_order,
                              Clock::time_point now, const std::vector<std::string>& lost) {
  elastic_ = policy;
  rank_order_.clear();
  for (const auto& t : rank_order) {
    if (expected_.count(t) && std::find(rank_order_.begin(), rank_order_.end(), t) == rank_order_.end()) {
      rank_order_.push_back(t);
    }
  }
  // A task that never registered is absent from the service's start, but gets at least
  // one heartbeat timeout to start up (the time a failure would take to be noticed).
  const auto grace = std::max<Clock::duration>(heartbeat_timeout_ - elastic_.wait, Clock::duration::zero());
  for (auto& [name, s] : tasks_) {
    if (s.registered) continue;
    const bool gone = std::find(lost.begin(), lost.end(), name) != lost.end();
    s.absent_since = gone ? now : now + grace;
  }
}

std::vector<std::string> ServiceState::AdoptionsFor(const std::string& host, Clock::time_point now) {
  std::vector<std::string> out;
  if (!elastic_.enabled || job_finished_) return out;
  auto present = [&](const TaskState& s) { return s.registered && !s.failed && !s.shut_down; };
  int own_processes = 0;
  for (const auto& t : rank_order_) {
    const TaskState& s = *Find(t);
    own_processes += present(s) && s.hosted_by.empty() ? 1 : 0;
  }
  if (own_processes < elastic_.min_present) return out;
  const TaskState* h = Find(host);
  if (h == nullptr || !present(*h)) return out;
  std::string first_present;
  for (const auto& t : rank_order_) {
    if (present(*Find(t))) {
      first_present = t;
      break;
    }
  }
  std::string before;  // the nearest present task before the one looked at
  for (const auto& t : rank_order_) {
    TaskState& s = *Find(t);
    if (present(s)) {
      before = t;
      continue;
    }
    if (!s.absent_since || now - *s.absent_since < elastic_.wait) continue;
    const std::string& adopter = before.empty() ? first_present : before;
    if (adopter != host) continue;
    auto [it, fresh] = directed_.insert_or_assign(t, host);
    if (fresh) RT_LOG(INFO) << t << " absent: its virtual rank goes to " << host << "'s process (elastic)";
    out.push_back(t);
  }
  return out;
}

std::string ServiceState::HostOf(const std::string& task) const {
  const TaskState* s = Find(task);
  return s == nullptr ? std::string() : s->hosted_by;
}

void ServiceState::DiscountAbsence(Clock::duration absence) {
  if (absence <= Clock::duration::zero()) return;
  for (auto& [name, s] : tasks_) {
    if (s.last_heartbeat) *s.last_heartbeat += absence;
  }
}

Status ServiceState::Shutdown(const std::string& task) {
  RT_RETURN_IF_ERROR(CheckKnownTask(task));
  TaskState& s = *Find(task);
  s.shut_down = true;
  s.last_heartbeat.reset();  // a task that left in order is not watched any more
  job_finished_ = true;
  return Status::Ok();
}

std::vector<std::string> ServiceState::MissingShutdowns() const {
  std::vector<std::string> missing;
  for (const auto& [name, s] : tasks_) {
    if (!s.shut_down) missing.push_back(name);
  }
  return missing;
}

void ServiceState::BreakGeneration(const std::string& reason) {
  if (broken_ || generation_ < 0) return;
  broken_ = true;
  broken_reason_ = reason;
  RT_LOG(INFO) << "generation " << generation_ << " is broken: " << reason;  // the chief's recovery line says it
}

Status ServiceState::ArriveAtRendezvous(const std::string& task, uint64_t incarnation, int64_t last_generation,
                                        const std::string& reason) {
  RT_RETURN_IF_ERROR(CheckKnownTask(task));
  TaskState& s = *Find(task);
  if (!s.registered) {
    return FailedPreconditionError("the coordination service does not know " + task +
                                   " (it has not registered, or the chief restarted and forgot it); register again, "
                                   "then rendezvous");
  }
  if (s.incarnation != incarnation) {
    return AbortedError(task + " (incarnation " + std::to_string(incarnation) +
                        ") was replaced by a restarted process (incarnation " + std::to_string(s.incarnation) +
                        "); this process must exit");
  }
  if (s.failed) {
    return AbortedError(task + " (incarnation " + std::to_string(incarnation) + ") was declared failed: " +
                        s.failure_reason + "; this process must exit and be restarted");
  }
  // A retried call after the generation formed: it is already a member, nothing to do.
  if (s.member_generation > last_generation) return Status::Ok();
  if (IsCurrentMember(s) && last_generation >= generation_) {
    BreakGeneration(task + " left generation " + std::to_string(generation_) + ": " +
                    (reason.empty() ? "no reason given" : reason));
  }
  arrivals_[task] = Arrival{incarnation, last_generation};
  MaybeFormGeneration();
  return Status::Ok();
}

void ServiceState::MaybeFormGeneration() {
  int64_t newest = generation_;
  for (const auto& [name, s] : tasks_) {
    auto it = arrivals_.find(name);
    if (it == arrivals_.end() || !s.registered || s.failed || s.incarnation != it->second.incarnation) return;
    newest = std::max(newest, it->second.last_generation);
  }
  // Past every number a task has seen: a restarted chief's service starts at -1 but
  // its survivors remember their generations, and numbers must not repeat.
  generation_ = newest + 1;
  broken_ = false;
  broken_reason_.clear();
  for (auto& [name, s] : tasks_) s.member_generation = generation_;
  arrivals_.clear();
  RT_LOG(INFO) << "formed generation " << generation_ << " with " << tasks_.size() << " tasks";
}

ServiceState::TaskView ServiceState::View(const std::string& task) const {
  TaskView v;
  v.task = task;
  const TaskState* s = Find(task);
  if (s == nullptr) return v;
  v.registered = s->registered;
  v.incarnation = s->incarnation;
  v.shut_down = s->shut_down;
  v.failed = s->failed;
  v.failure_reason = s->failure_reason;
  v.member_generation = s->member_generation;
  v.last_heartbeat = s->last_heartbeat;
  v.hosted_by = s->hosted_by;
  return v;
}

RendezvousInfo ServiceState::RendezvousStatus(const std::string& task, int64_t last_generation) const {
  RendezvousInfo info;
  info.job_finished = job_finished_;
  const TaskState* self = Find(task);
  if (self != nullptr && self->member_generation > last_generation) {
    info.formed = true;
    info.generation = self->member_generation;
    return info;
  }
  for (const auto& [name, s] : tasks_) {
    auto it = arrivals_.find(name);
    if (it == arrivals_.end() || !s.registered || s.failed || s.incarnation != it->second.incarnation) {
      info.missing.push_back(name);
    }
  }
  return info;
}

}  // namespace ringtrain::coordination
