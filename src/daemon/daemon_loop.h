// What every daemon does (`ringtrain serve`, the chief's included): poll the chief
// daemon, run the current job's task as a child process (job_child.h) in the job's
// directory (job_files.h), and report how it ended.
//
// - A child that fails with a restartable code (common/exit_policy.h: a signal, 1, 4, 5,
//   7) while its job is not being stopped is started again, up to max_restarts times per
//   job, as `launch --max_restarts` does; the job's other children wait for it in place.
// - A child that will not run again is a final outcome: written to the job's
//   outcome.json (so that a restarted daemon does not run the job again) and reported
//   with every poll until the chief daemon has ended the job.
// - `stop` from the chief daemon: SIGTERM to the child (it stops at a step boundary after
//   a backup, exit 7), SIGKILL after preempt_grace.
// - The chief daemon unreachable: the child keeps running (it talks to its own job's
//   chief), and the poll is retried; one warning per outage.
// - `*leave` set (SIGTERM to the daemon): the child is sent SIGTERM and waited for up to
//   preempt_grace (then SIGKILL); nothing is reported, so the job resumes when the daemon
//   comes back. Returns then.
//
// Blocking: runs until *leave. Thread: call from one thread that outlives the children
// (PR_SET_PDEATHSIG is tied to it).
#pragma once

#include <atomic>
#include <chrono>
#include <string>
#include <vector>

#include "common/status.h"
#include "daemon/daemon_client.h"

namespace ringtrain::daemon {

struct DaemonLoopOptions {
  std::string task;        // this daemon's TF_CONFIG task, "worker:1"
  std::string chief_task;  // whose child writes the job's metrics
  std::string tf_config;   // the daemons' TF_CONFIG JSON, this task's
  std::string jobs_dir;    // <work dir>/jobs
  std::string exe;         // the ringtrain binary
  std::vector<std::string> worker_flags;  // after `worker --job J` (TLS files)
  int port_stride = 1;     // job_files.h JobPortOffset
  int port_span = 16;
  int max_restarts = 3;
  std::chrono::milliseconds poll_interval{100};  // while a child runs, or the chief's daemon is unreachable
  // How long an idle daemon asks the chief's daemon to hold its poll until there is
  // work (daemon_server.h), so that a submitted job starts at once; 0: poll every
  // poll_interval. Keep it well under the heartbeat timeout (the chief counts a daemon
  // gone after that long without a poll).
  std::chrono::milliseconds idle_poll_wait{1000};
  std::chrono::milliseconds preempt_grace{std::chrono::seconds(25)};
  DaemonClientOptions client;  // to the chief daemon; caller = task
};

// Returns OK after leaving; an error only for what the daemon cannot go on without (its
// work directory cannot be written).
Status RunDaemonLoop(const DaemonLoopOptions& options, const std::atomic<bool>& leave);

}  // namespace ringtrain::daemon
