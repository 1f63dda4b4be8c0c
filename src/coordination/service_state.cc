#include "coordination/service_state.h"

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
    RT_LOG(WARNING) << task << " registered again with a new incarnation (" << s.incarnation << " -> "
                    << incarnation << "): the process restarted";
    s.last_heartbeat.reset();
    s.shut_down = false;
  }
  s.registered = true;
  s.incarnation = incarnation;
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
    failed_.push_back(info);
    newly_failed.push_back(std::move(info));
  }
  return newly_failed;
}

Status ServiceState::Shutdown(const std::string& task) {
  RT_RETURN_IF_ERROR(CheckKnownTask(task));
  TaskState& s = *Find(task);
  s.shut_down = true;
  s.last_heartbeat.reset();  // a task that left in order is not watched any more
  return Status::Ok();
}

std::vector<std::string> ServiceState::MissingShutdowns() const {
  std::vector<std::string> missing;
  for (const auto& [name, s] : tasks_) {
    if (!s.shut_down) missing.push_back(name);
  }
  return missing;
}

}  // namespace ringtrain::coordination
