// The coordination service's state machine, without gRPC: who registered (with which
// incarnation), the key-value store, barrier arrivals, heartbeats and failures,
// generations (rendezvous for the ring), and who shut down. The gRPC layer (coordination_service.h) holds one under its mutex and
// turns the answers into long-poll responses.
//
// Threading: not thread-safe; the owner serialises every call. Nothing blocks. Time is
// passed in (`now`) so that tests can drive heartbeat expiry without sleeping.
//
// Failure detection: a task is watched from its first heartbeat on (not from
// registration), so a task that takes long to load its data before it starts
// heartbeating is not declared failed. A task that called Shutdown is never declared
// failed. A failure is sticky for the failed process only: its incarnation's later
// heartbeats and arrivals are answered ABORTED (it must exit so that its supervisor
// restarts it). A new incarnation of the task may register; that clears the failure.
//
// Generations (recovery in place): every task arrives at the rendezvous for the
// generation after the newest one it was a member of. When every expected task has
// arrived (registered, with its current incarnation, not failed), a generation is
// formed with all of them as members and a number larger than any they were in. The
// current generation breaks, once, when a member is declared failed, registers a new
// incarnation (its old process is gone), or arrives for the next generation itself
// (it left, e.g. because its collective failed); heartbeats report the break so that
// the survivors abort their collectives and rendezvous again.
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

// Elastic membership (job field "elastic"): a task absent for `wait` (declared failed, or
// never registered since the service started) is hosted by a present task's process, as
// long as `min_present` tasks run in their own processes.
struct ElasticPolicy {
  bool enabled = false;
  int min_present = 1;
  std::chrono::milliseconds wait{0};
};

struct FailedTaskInfo {
  std::string task;
  std::string reason;
};

// The answer to a rendezvous long poll.
struct RendezvousInfo {
  bool formed = false;               // a generation newer than the caller's last one includes it
  int64_t generation = -1;           // which, when formed
  std::vector<std::string> missing;  // when not formed: not arrived, failed or not registered (sorted)
  bool job_finished = false;         // some task called Shutdown: there is nothing to rejoin
};

class ServiceState {
 public:
  using Clock = std::chrono::steady_clock;

  // What `ringtrain status` shows of one task (status_board.h).
  struct TaskView {
    std::string task;
    bool registered = false;
    uint64_t incarnation = 0;
    bool shut_down = false;
    bool failed = false;
    std::string failure_reason;
    int64_t member_generation = -1;
    std::optional<Clock::time_point> last_heartbeat;
    std::string hosted_by;  // elastic: the task whose process runs it; "" its own
  };

  // `expected_tasks`: every task of the cluster ("chief:0", "worker:0", ...); duplicates
  // are ignored. `reference_job_json`: the chief's job; empty disables the job check.
  ServiceState(const std::vector<std::string>& expected_tasks, std::string reference_job_json,
               std::chrono::milliseconds heartbeat_timeout);

  const std::set<std::string>& expected_tasks() const { return expected_; }

  // Elastic membership. `rank_order`: the training tasks in rank order (the order that
  // decides who hosts whom). A task not registered yet is hosted after the policy's wait,
  // but not before one heartbeat timeout from `now` (its time to start up).
  // `lost`: tasks known to be gone already (a successor's service: the chief), hosted
  // after the policy's wait from `now` without the start-up grace.
  void SetElastic(const ElasticPolicy& policy, const std::vector<std::string>& rank_order, Clock::time_point now,
                  const std::vector<std::string>& lost = {});
  // The absent tasks `host`'s process should start hosting now: those absent for at least
  // the policy's wait whose nearest present task before them in rank order (the first
  // present task, for those before it) is `host`, when at least min_present tasks run in
  // their own processes. Answered with every heartbeat of `host` until the task
  // registers (the process ignores a task it already hosts); that registration is
  // recorded as hosted by `host`. Empty without a policy.
  std::vector<std::string> AdoptionsFor(const std::string& host, Clock::time_point now);
  // The task whose process hosts `task` ("" when it runs in its own).
  std::string HostOf(const std::string& task) const;
  // INVALID_ARGUMENT "task 'worker:7' is not in this cluster's TF_CONFIG ..." if unknown.
  Status CheckKnownTask(const std::string& task) const;

  // Registration. Same incarnation again: idempotent. A new incarnation (the process
  // restarted): accepted, recorded and logged; its heartbeat watch, shutdown mark,
  // failure and rendezvous arrival are reset, since they belonged to the old process,
  // and the current generation breaks if the task was a member.
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
  // `incarnation` is not the registered one (this process was replaced by a restart)
  // or this incarnation was declared failed (it hung or was cut off, and came back).
  Status Heartbeat(const std::string& task, uint64_t incarnation, Clock::time_point now);
  // Declares failed every watched task whose last heartbeat is older than the timeout,
  // drops its rendezvous arrival and breaks the current generation if it was a member.
  // Returns only the tasks newly declared failed by this call (log them once).
  std::vector<FailedTaskInfo> DetectFailures(Clock::time_point now);
  // The service itself did not run for `absence` (its process was stopped, e.g. by
  // SIGSTOP or a debugger, or starved of CPU): every watched task's silence is shortened
  // by as much, so that only time in which the service could read heartbeats counts
  // against a task. A task that really died in the meantime is still declared failed,
  // one heartbeat timeout after the service resumed.
  void DiscountAbsence(Clock::duration absence);
  // The tasks currently declared failed, in the order declared; a task that registered
  // a new incarnation since is no longer listed.
  const std::vector<FailedTaskInfo>& failed_tasks() const { return failed_; }

  // Rendezvous for the generation after `last_generation` (-1: a fresh process).
  // FAILED_PRECONDITION if the task is not registered (e.g. the chief restarted and
  // forgot it: register again); ABORTED if `incarnation` is stale or was declared
  // failed. A member of the current generation that arrives for a newer one breaks it
  // (`reason` says why it left). Forms the next generation when every task has arrived;
  // arriving again for a generation already formed is harmless.
  Status ArriveAtRendezvous(const std::string& task, uint64_t incarnation, int64_t last_generation,
                            const std::string& reason);
  RendezvousInfo RendezvousStatus(const std::string& task, int64_t last_generation) const;
  int64_t generation() const { return generation_; }  // newest formed; -1 before the first
  bool generation_broken() const { return broken_; }
  const std::string& broken_reason() const { return broken_reason_; }

  // Orderly shutdown. Marks the job finished: nobody rendezvous for a new generation.
  Status Shutdown(const std::string& task);
  std::vector<std::string> MissingShutdowns() const;  // sorted
  bool job_finished() const { return job_finished_; }

  // Every expected task's state, for status.
  TaskView View(const std::string& task) const;

 private:
  struct TaskState {
    bool registered = false;
    uint64_t incarnation = 0;
    std::optional<Clock::time_point> last_heartbeat;  // set from the first heartbeat on
    bool shut_down = false;
    bool failed = false;
    std::string failure_reason;     // when failed
    int64_t member_generation = -1;  // newest generation this incarnation is a member of
    std::optional<Clock::time_point> absent_since;  // elastic: declared failed, or not registered yet
    std::string hosted_by;  // elastic: the task whose process runs this incarnation; "" its own
  };
  struct Arrival {
    uint64_t incarnation = 0;
    int64_t last_generation = -1;
  };

  TaskState* Find(const std::string& task);
  const TaskState* Find(const std::string& task) const;
  bool IsCurrentMember(const TaskState& s) const { return generation_ >= 0 && s.member_generation == generation_; }
  // Breaks the current generation once; later reasons are dropped (the first says why).
  void BreakGeneration(const std::string& reason);
  // Forms the next generation if every expected task has arrived with its current
  // incarnation and is not failed.
  void MaybeFormGeneration();

  std::set<std::string> expected_;
  std::string reference_job_json_;
  std::chrono::milliseconds heartbeat_timeout_;
  std::map<std::string, TaskState> tasks_;  // one entry per expected task
  std::map<std::string, std::string> kv_;
  std::map<std::string, std::set<std::string>> barriers_;  // name -> tasks arrived
  std::vector<FailedTaskInfo> failed_;                      // in the order declared
  int64_t generation_ = -1;
  bool broken_ = false;  // the current generation lost a member
  std::string broken_reason_;
  std::map<std::string, Arrival> arrivals_;  // for the next generation
  bool job_finished_ = false;
  ElasticPolicy elastic_;
  std::vector<std::string> rank_order_;
  std::map<std::string, std::string> directed_;  // adoptions answered, task -> host, until it registers
};

// "worker:1, worker:2" (for messages).
std::string JoinTasks(const std::vector<std::string>& tasks);

}  // namespace ringtrain::coordination
