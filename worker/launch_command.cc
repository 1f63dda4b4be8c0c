// `ringtrain launch`: starts N local workers on free loopback ports with their
// TF_CONFIG set, prefixes each line of their output with the task ("[worker:1] "),
// and exits non-zero if any worker fails: with the code of the failure that caused the
// others (common/exit_policy.h RootCauseExit), e.g. the chief's 6 rather than the 5 of
// the worker that lost it.
//
//   ringtrain launch --workers N [--processes P] --job JOB.json [--base_port P] [--grace_s S]
//                    [--max_restarts K] [--metrics_port P] [-- worker flags]
//
//   --workers N        local workers, 1..64 (default 2)
//   --processes P      run the N workers in P processes, 1..N (default N): process i
//                      hosts the tasks i*N/P .. (i+1)*N/P-1, each on its own thread
//                      (`worker --host_tasks`); the model is the N-process run's, bit
//                      for bit (a 16-worker run reproduced on a laptop)
//   --base_port P      ports P..P+N-1 instead of free ports the kernel picks
//   --bind_to core|none  core (default): each worker runs on its own contiguous share
//                      of the CPUs launch may use, as mpirun --bind-to core; none: where
//                      the kernel puts it. With more workers than CPUs nobody is bound
//   --grace_s S        after a worker fails for good, how long the others get to
//                      end on their own before SIGTERM, 1..3600 (default 30)
//   (A job with "elastic" goes on without a worker, the chief included, that was killed
//   or failed with a restartable code and is not restarted: the others host its tasks,
//   and it counts in launch's exit code only if no worker finished the job.)
//   --max_restarts K   restart a worker that was killed or exited with 1, 4, 5 or 7
//                      (internal, rendezvous, peer failure, preempted) at once, with
//                      the same TF_CONFIG, up to K times per worker, 0..1000 (default
//                      0 = never); exits 2, 3 and 6 are never restarted
//   --metrics_port P   worker i serves Prometheus /metrics on port P+i (the chief,
//                      worker 0, also its live page on P); default off
//   --output default|all  default: what Keras' fit() shows (the chief's summary, its
//                      live bar on a terminal, one line per epoch) and every task's
//                      warnings and errors, prefixed; all: every line of every task
//   -v, --verbose      INFO lines on the console too
//   --log_dir DIR      one log file per task, DIR/<task>.log (default: logs/ next to
//                      the job file)
//
// SIGTERM/SIGINT to launch are forwarded: each worker gets one SIGTERM, stops at the
// same step boundary after the chief's backup and exits 7; launch waits for them up to
// RINGTRAIN_PREEMPT_GRACE_S (+5 s), SIGKILLs what is left, and exits 7.
#include <string>
#include <vector>

#include "commands.h"
#include "common/exit_codes.h"
#include "config/job_config.h"
#include "config/settings.h"
#include "console_setup.h"
#include "env/env.h"
#include "env/file_util.h"
#include "flags.h"
#include "local_cluster.h"
#include "metrics_setup.h"

namespace ringtrain::cli {

int RunLaunch(const std::vector<std::string>& given, const std::string& self_path) {
  std::vector<std::string> args = given;
  const bool verbose = TakeShortVerbose(&args);
  auto flags = Flags::Parse(
      args, {"workers", "processes", "job", "base_port", "grace_s", "max_restarts", "output", "log_dir", "metrics_port", "bind_to"},
      {kVerboseFlag});
  if (!flags.ok()) return Fail(flags.status().About(Subject::kConfig));
  auto n = flags->get_int("workers", 2, 1, 64);
  auto processes = flags->get_int("processes", n.ok() ? *n : 2, 1, n.ok() ? *n : 64);
  auto base_port = flags->get_int("base_port", 0, 0, 65535 - 64);
  auto grace_s = flags->get_int("grace_s", 30, 1, 3600);
  auto max_restarts = flags->get_int("max_restarts", 0, 0, 1000);
  auto metrics_port = flags->get_int("metrics_port", 0, 0, 65535 - 64);
  auto bind = ParseCpuBinding(flags->get("bind_to", "core"));
  for (const Status& s : {n.status(), processes.status(), base_port.status(), grace_s.status(), max_restarts.status(),
                          metrics_port.status(), bind.status()}) {
    if (!s.ok()) return Fail(s.About(Subject::kConfig));
  }
  if (!flags->has("job")) return Fail(InvalidArgumentError("--job JOB.json is required").About(Subject::kConfig));
  LocalClusterOptions options;
  options.exe = ResolveExecutable(self_path);
  options.args = {"worker", "--job", flags->get("job")};
  options.args.insert(options.args.end(), flags->rest().begin(), flags->rest().end());
  options.workers = *n;
  options.processes = *processes;
  options.base_port = *base_port;
  options.grace_s = *grace_s;
  options.max_restarts = *max_restarts;
  options.bind = *bind;
  // An elastic job goes on without a worker lost for good (a job that does not load is
  // the workers' to report, with its one line).
  if (auto job = config::LoadJobConfig(flags->get("job")); job.ok()) options.elastic = job->elastic.enabled;
  console::LineMux console(stdout, console::IsTerminal(stdout));
  std::string log_dir;
  if (Status st = ConfigureLaunchOutput(*flags, verbose, flags->get("job"), &console, &options, &log_dir); !st.ok()) {
    return Fail(st);
  }
  auto settings = config::LoadSettings();  // RINGTRAIN_PREEMPT_GRACE_S, as the workers read it
  if (!settings.ok()) return Fail(settings.status().About(Subject::kConfig));
  options.preempt_grace_s = settings->preempt_grace_s;
  if (*metrics_port > 0) {  // after the console's per-task arguments
    auto console_args = options.task_args;
    auto port_args = MetricsPortArgs(*metrics_port);
    options.task_args = [console_args, port_args](int index) {
      std::vector<std::string> args = console_args ? console_args(index) : std::vector<std::string>{};
      for (auto& a : port_args(index)) args.push_back(std::move(a));
      return args;
    };
  }
  // `ringtrain status --tf_config DIR/cluster.json` finds the chief of this launch.
  options.on_cluster = [&console, log_dir](const std::string& cluster_json) {
    const std::string path = log_dir + "/cluster.json";
    Status st = env::WriteFileAtomically(env::Default(), path, cluster_json + "\n");
    if (!st.ok()) console.WriteLine("launch: warning: cannot write " + path + " for `ringtrain status`: " + st.message());
  };
  auto code = RunLocalCluster(options);
  if (!code.ok()) return Fail(InternalError(code.status().message()));  // could not start the processes
  if (*code != 0) console.WriteLine("launch: each task's full log is in " + log_dir + "/");
  return *code;
}

}  // namespace ringtrain::cli
