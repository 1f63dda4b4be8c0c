// N copies of a ringtrain command on this machine, each one task of a loopback
// TF_CONFIG cluster (127.0.0.1, free or consecutive ports), with their output routed
// back here. Used by `ringtrain launch` (workers) and `ringtrain bench --workers`.
//
// Blocking: RunLocalCluster returns when every child has exited. A child that fails
// with a restartable code (killed by a signal, 1, 4 or 5) is started again at once
// with the same arguments and TF_CONFIG, up to max_restarts times per task: the
// others keep running, waiting for it to come back. After the first failure that is
// not restarted the others get grace_s to fail on their own (heartbeats, collective
// deadlines), then SIGTERM, then SIGKILL 5 s later. SIGINT/SIGTERM to this process is
// forwarded (signal_forwarding.h): each child gets one SIGTERM, saves its step and exits
// 7; what is left after preempt_grace_s is SIGKILLed; nothing is restarted after it. Call from the main
// thread (it installs signal handlers).
#pragma once

#include <cstdio>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "common/cpu_binding.h"
#include "common/status.h"
#include "console/line_mux.h"

namespace ringtrain::cli {

// Where one child's output goes.
// Echoed lines go to the console (options.console) whole, a line at a time.
enum class Echo {
  kPrefixed,    // stdout and stderr, each line prefixed "[worker:i] ", to our stdout as it comes
  kStdout,      // stdout to our stdout as it comes, unprefixed; stderr only if the child fails
  kOnFailure,   // nothing unless the child fails
  kConsole,     // stdout unprefixed (with its progress bar), stderr prefixed: launch's chief
  kStderrOnly,  // stdout dropped, stderr prefixed: launch's other tasks (warnings and errors)
};

struct LocalClusterOptions {
  std::string exe;                // the binary to run (an absolute path)
  std::vector<std::string> args;  // its arguments, the same for every child
  int workers = 2;
  // How many processes run the workers (1..workers; 0: one each). Process i hosts the
  // contiguous tasks [i*workers/processes, (i+1)*workers/processes), each on its own
  // thread (`worker --host_tasks`), with the TF_CONFIG of the first; its output, its
  // restarts and its CPU share are the process's. The functions below are given the
  // first task's index.
  int processes = 0;
  int base_port = 0;  // ports base_port.. ; 0 = free ports the kernel picks
  int grace_s = 30;
  // After SIGTERM/SIGINT to this process, how long the children (each sent one SIGTERM:
  // they stop at a step boundary and exit 7) get before SIGKILL (signal_forwarding.h).
  double preempt_grace_s = 25;
  // How many times each task may be restarted after a restartable failure
  // (common/exit_policy.h IsRestartableExit); 0 = never, the first failure ends the cluster.
  int max_restarts = 0;
  // The job is elastic (job field "elastic"): a worker process (the chief's included) that
  // fails with a restartable code and is not restarted is lost, not a failure: the others
  // go on (they host its tasks) and it counts in the exit code only if no process
  // finished the job.
  bool elastic = false;
  // kCore: worker i runs on its own share of the CPUs this process may use
  // (common/cpu_binding.h), kept across restarts; nobody is bound when there are more
  // workers than CPUs.
  CpuBinding bind = CpuBinding::kNone;
  std::function<Echo(int index)> echo = [](int) { return Echo::kPrefixed; };
  // Arguments appended for one task (after `args`: launch's --log_file, --metrics_port),
  // and variables set in its environment; null: none.
  std::function<std::vector<std::string>(int index)> task_args;
  std::function<std::vector<std::pair<std::string, std::string>>(int index)> task_env;
  // Where echoed lines go; null: a console on stdout that is not treated as a terminal.
  // Not owned. When `report` is stdout, this function's own lines go through it too.
  console::LineMux* console = nullptr;
  // Told the cluster once its ports are chosen, before any child starts: {"cluster":
  // {"worker": ["127.0.0.1:P", ...]}} (launch writes it for `ringtrain status`). Null: nothing.
  std::function<void(const std::string& cluster_json)> on_cluster;
  // Where this function's own lines go ("launched ...", "worker:1 exited with code 5")
  // and the kept output of a failed child, prefixed with its task.
  FILE* report = stdout;
  bool announce = true;  // print "launched N workers on 127.0.0.1 ports ..."
  std::string label = "launch";  // prefix of this function's own lines
};

// Runs the cluster to completion. Returns 0 if every child succeeded; else, of the
// failing children's exit codes that were not restarted (128+signal if one was
// killed), the root cause (common/exit_policy.h RootCauseExit: the chief's 6 rather
// than the 5 of the worker that lost it; a SIGTERM or SIGKILL this function sent
// counts only when nothing else failed; 7 when the children were preempted); or
// 128+signal if this process was interrupted and no child exited with a failure. An error if the children could not be started.
StatusOr<int> RunLocalCluster(const LocalClusterOptions& options);

// The executable behind `self_path` (e.g. /proc/self/exe), or self_path itself.
std::string ResolveExecutable(const std::string& self_path);

}  // namespace ringtrain::cli
