// What the chief's daemon decides: which job every daemon runs, when it has
// ended and how. Jobs run one at a time, first in first out, on all the daemons; the
// queue itself (durable, crash-safe) is jobqueue::JobQueue.
//
// Every daemon polls (daemon_server.h's Poll) with what its child runs and the final
// outcomes of its children for the current job; the board answers with the current
// job. The rules:
//
// - A new job starts only when every daemon of the cluster has polled within the
//   daemon timeout and runs nothing. A job the queue holds as `running` when the board
//   is made (the chief's daemon was restarted) is resumed at once: the daemons still
//   running it keep their children, the others start theirs (recovery in place).
// - A failed outcome (exit code other than 0 and 7) stops the job on every daemon (the
//   poll's `stop`); so does a cancel.
// - The job ends once every daemon has settled: it reported a final outcome for the job,
//   or it is gone (no poll for the daemon timeout) while the job is being stopped or the
//   chief's child has already ended. It ends cancelled if cancel was asked for, else
//   finished when every outcome is 0 (with the chief's final metrics), else failed with
//   the root cause's error (common/exit_policy.h RootCauseExit), naming the task.
//
// Thread-safety: every method may be called from any thread (one mutex); the queue's
// writes happen under it, so a poll may wait for one fsync.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "jobqueue/job_queue.h"

namespace ringtrain::daemon {

using SteadyTime = std::chrono::steady_clock::time_point;

// What a daemon's child did with a job, once it will not be started again.
struct ChildOutcome {
  int64_t job_id = 0;
  int exit_code = 0;         // 128+signal when killed
  std::string error;         // its last error line, when it failed
  std::string metrics_json;  // the chief's: the last epoch's history line ("" if none)
};

// What a daemon should run now.
struct Assignment {
  int64_t job_id = 0;  // 0: nothing
  std::string job_text;
  int attempt = 0;
  bool stop = false;  // stop the child: the job is being cancelled or failed elsewhere
};

struct BoardOptions {
  std::vector<std::string> tasks;  // every daemon's TF_CONFIG task
  std::string chief_task;          // the one whose child's metrics and output are the job's
  std::chrono::milliseconds daemon_timeout{std::chrono::seconds(10)};
};

class JobBoard {
 public:
  // Resumes the job `queue` holds as running, if any (counting an attempt).
  static StatusOr<std::unique_ptr<JobBoard>> Make(std::unique_ptr<jobqueue::JobQueue> queue, BoardOptions options,
                                                  double now_s);

  StatusOr<int64_t> Submit(const std::string& name, const std::string& job_text, double now_s);
  // The job's state after the call (jobqueue::JobQueue::Cancel).
  StatusOr<jobqueue::JobState> Cancel(int64_t id, double now_s);
  std::vector<jobqueue::JobRecord> List() const { return queue_->List(); }
  std::optional<jobqueue::JobRecord> Get(int64_t id) const { return queue_->Get(id); }

  // A daemon's poll. INVALID_ARGUMENT for a task not in the cluster; a queue write that
  // fails is returned (kStorage) and the poll may be repeated.
  StatusOr<Assignment> Poll(const std::string& task, int64_t running_job, const std::vector<ChildOutcome>& outcomes,
                            SteadyTime now, double now_s);

  // The job being run, 0: none.
  int64_t current_job() const;
  // Counts the changes an idle daemon may have to act on: a job submitted, started or
  // ended (poll_parking.h wakes the held polls when it moves).
  uint64_t changes() const;

 private:
  struct Daemon {
    bool seen = false;
    SteadyTime last_poll{};
    int64_t running_job = 0;
  };
  JobBoard(std::unique_ptr<jobqueue::JobQueue> queue, BoardOptions options);
  bool PresentLocked(const Daemon& d, SteadyTime now) const;
  // Ends the current job if every daemon has settled; starts the next if all are idle.
  Status AdvanceLocked(SteadyTime now, double now_s);
  Status EndCurrentLocked(double now_s);
  Assignment AssignmentLocked() const;

  std::unique_ptr<jobqueue::JobQueue> queue_;
  const BoardOptions options_;
  mutable std::mutex mu_;
  std::map<std::string, Daemon> daemons_;                // guarded by mu_
  std::optional<jobqueue::JobRecord> current_;           // guarded by mu_
  std::map<std::string, ChildOutcome> outcomes_;         // of current_, by task; guarded by mu_
  bool stopping_ = false;                                // guarded by mu_
  uint64_t changes_ = 0;                                 // guarded by mu_
};

}  // namespace ringtrain::daemon
