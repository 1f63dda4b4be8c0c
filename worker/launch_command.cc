// `ringtrain launch`: starts N local workers on free loopback ports with their
// TF_CONFIG set, prefixes each line of their output with the task ("[worker:1] "),
// and exits non-zero if any worker fails: with the code of the failure that caused the
// others (common/exit_policy.h RootCauseExit), e.g. the chief's 6 rather than the 5 of
// the worker that lost it.
//
//   ringtrain launch --workers N --job JOB.json [--base_port P] [--grace_s S]
//                    [--max_restarts K] [--metrics_port P] [-- worker flags]
//
//   --workers N        local workers, 1..64 (default 2)
//   --base_port P      ports P..P+N-1 instead of free ports the kernel picks
//   --grace_s S        after a worker fails for good, how long the others get to
//                      end on their own before SIGTERM, 1..3600 (default 30)
//   --max_restarts K   restart a worker that was killed or exited with 1, 4 or 5
//                      (internal, rendezvous, peer failure) at once, with the same
//                      TF_CONFIG, up to K times per worker, 0..1000 (default 0 =
//                      never); exits 2, 3 and 6 are never restarted
//   --metrics_port P   worker i serves Prometheus /metrics on port P+i (the chief,
//                      worker 0, also its live page on P); default off
#include <string>
#include <vector>

#include "commands.h"
#include "common/exit_codes.h"
#include "flags.h"
#include "local_cluster.h"
#include "metrics_setup.h"

namespace ringtrain::cli {

int RunLaunch(const std::vector<std::string>& args, const std::string& self_path) {
  auto flags = Flags::Parse(args, {"workers", "job", "base_port", "grace_s", "max_restarts", "metrics_port"});
  if (!flags.ok()) return Fail(flags.status().About(Subject::kConfig));
  auto n = flags->get_int("workers", 2, 1, 64);
  auto base_port = flags->get_int("base_port", 0, 0, 65535 - 64);
  auto grace_s = flags->get_int("grace_s", 30, 1, 3600);
  auto max_restarts = flags->get_int("max_restarts", 0, 0, 1000);
  auto metrics_port = flags->get_int("metrics_port", 0, 0, 65535 - 64);
  for (const Status& s : {n.status(), base_port.status(), grace_s.status(), max_restarts.status(),
                          metrics_port.status()}) {
    if (!s.ok()) return Fail(s.About(Subject::kConfig));
  }
  if (!flags->has("job")) return Fail(InvalidArgumentError("--job JOB.json is required").About(Subject::kConfig));
  LocalClusterOptions options;
  options.exe = ResolveExecutable(self_path);
  options.args = {"worker", "--job", flags->get("job")};
  options.args.insert(options.args.end(), flags->rest().begin(), flags->rest().end());
  options.workers = *n;
  options.base_port = *base_port;
  options.grace_s = *grace_s;
  options.max_restarts = *max_restarts;
  if (*metrics_port > 0) options.task_args = MetricsPortArgs(*metrics_port);
  auto code = RunLocalCluster(options);
  if (!code.ok()) return Fail(InternalError(code.status().message()));  // could not start the processes
  return *code;
}

}  // namespace ringtrain::cli
