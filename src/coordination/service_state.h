// The coordination service's state machine, without gRPC: who registered (with which
// incarnation), the key-value store, barrier arrivals, heartbeats and failures, and
// who shut down. The gRPC layer (coordination_service.h) holds one under its mutex and
// turns the answers into long-poll responses.
//
// Threading: not thread-safe; the owner serialises every call. Nothing blocks. Time is
// passed in (`now`) so that tests can drive heartbeat expiry without sleeping.
//
// Failure detection: a task is watched from its first heartbeat on (not from
// registration), so a task that takes long to load its data before it starts
// heartbeating is not declared failed. A task that called Shutdown is never declared
// failed. A failure is sticky: the cluster is expected to restart as a whole, so a
// failed task stays in the failed list even if it re-registers.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/status.h"

namespace ringtrain::coordination {

struct FailedTaskInfo {
  std::string task;
  std::string reason;
};

class ServiceState {
 public:
  using Clock = std::chrono::steady_clock;

  // `expected_tasks`: every task of the cluster ("chief:0", "worker:0", ...); duplicates
  // are ignored. `reference_job_json`: the chief's job; empty disables the job check.
  ServiceState(const std::vector<std::string>& expected_tasks, std::string reference_job_json,
               std::chrono::milliseconds heartbeat_timeout);

  const std::set<std::string>& expected_tasks() const { return expected_; }
  // INVALID_ARGUMENT "task 'worker:7' is not in this cluster's TF_CONFIG ..." if unknown.
  Status CheckKnownTask(const std::string& task) const;

  // Registration. Same incarnation again: idempotent. A new incarnation (the process
  // restarted): accepted, recorded and logged; its heartbeat watch and shutdown mark
  // are reset, since they belonged to the old process.
  Status Register(const std::string& task, uint64_t incarnation, const std::string& job_json);
  std::vector<std::string> MissingRegistrations() const;  // sorted

  // Key-value store.
  void KvSet(const std::string& key, const std::string& value);
  std::optional<std::string> KvGet(const std::string& key) const;

  // Barriers, by name. Arriving twice is harmless. A barrier that has passed stays
  // passed (use a new name for each barrier).
  Status ArriveAtBarrier(const std::string& name, const std::string& task);
  std::vector<std::string> MissingAtBarrier(const std::string& name) const;  // empty: passed

  // Records a heartbeat. FAILED_PRECONDITION if the task has not registered; ABORTED if
  // `incarnation` is not the registered one (this process was replaced by a restart).
  Status Heartbeat(const std::string& task, uint64_t incarnation, Clock::time_point now);
  // Declares failed every watched task whose last heartbeat is older than the timeout.
  // Returns only the tasks newly declared failed by this call (log them once).
  std::vector<FailedTaskInfo> DetectFailures(Clock::time_point now);
  const std::vector<FailedTaskInfo>& failed_tasks() const { return failed_; }

  // Orderly shutdown.
  Status Shutdown(const std::string& task);
  std::vector<std::string> MissingShutdowns() const;  // sorted

 private:
  struct TaskState {
    bool registered = false;
    uint64_t incarnation = 0;
    std::optional<Clock::time_point> last_heartbeat;  // set from the first heartbeat on
    bool shut_down = false;
    bool failed = false;
  };

  TaskState* Find(const std::string& task);

  std::set<std::string> expected_;
  std::string reference_job_json_;
  std::chrono::milliseconds heartbeat_timeout_;
  std::map<std::string, TaskState> tasks_;  // one entry per expected task
  std::map<std::string, std::string> kv_;
  std::map<std::string, std::set<std::string>> barriers_;  // name -> tasks arrived
  std::vector<FailedTaskInfo> failed_;                      // in the order declared
};

// "worker:1, worker:2" (for messages).
std::string JoinTasks(const std::vector<std::string>& tasks);

}  // namespace ringtrain::coordination
