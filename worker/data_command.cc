// `ringtrain data inspect JOB [--split train|eval] [--workers N] [--bench] [--threads N]
// [--seconds S] [--json]`: wires the job file and TF_CONFIG to data::Inspect
// (src/data/inspect.h). No cluster is formed and no model is built.
// Exit codes (common/exit_policy.h): 2 bad flags, job or sharding, 3 a data file missing
// or malformed.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "commands.h"
#include "common/exit_policy.h"
#include "config/job_config.h"
#include "config/tf_config.h"
#include "data/dataset.h"
#include "data/inspect.h"
#include "flags.h"

namespace ringtrain::cli {
namespace {

// TF_CONFIG's number of training tasks when it is set, else 1 (as `ringtrain worker`
// trains alone without it).
StatusOr<int> DefaultWorkers() {
  const char* env = std::getenv("TF_CONFIG");
  if (env == nullptr || *env == '\0') return 1;
  auto cluster = config::ParseTfConfig(env);
  if (!cluster.ok()) return cluster.status().WithContext("TF_CONFIG (used for the default --workers)");
  return cluster->num_workers();
}

int RunInspect(const std::vector<std::string>& args) {
  // The job may come first, as `ringtrain data inspect JOB`, or as --job JOB.
  std::vector<std::string> rest = args;
  std::string job_path;
  if (!rest.empty() && rest[0].rfind("--", 0) != 0) {
    job_path = rest[0];
    rest.erase(rest.begin());
  }
  auto flags = Flags::Parse(rest, {"job", "split", "workers", "threads", "seconds"}, {"bench", "json"});
  if (!flags.ok()) return Fail(flags.status().About(Subject::kConfig));
  if (flags->has("job")) {
    if (!job_path.empty()) return Fail(BadFlag("give the job once: `ringtrain data inspect JOB` or --job JOB"));
    job_path = flags->get("job");
  }
  if (job_path.empty()) return Fail(BadFlag("usage: ringtrain data inspect JOB.json [--split train|eval] "
                                            "[--workers N] [--bench] [--threads N] [--json]"));
  const std::string split = flags->get("split", "train");
  if (split != "train" && split != "eval") return Fail(BadFlag("--split must be train or eval, not '" + split + "'"));
  auto threads = flags->get_int("threads", 1, 1, 1024);
  auto seconds = flags->get_int("seconds", 3, 1, 3600);
  for (const Status& s : {threads.status(), seconds.status()}) {
    if (!s.ok()) return Fail(s.About(Subject::kConfig));
  }
  int workers = 1;
  if (flags->has("workers")) {
    auto w = flags->get_int("workers", 1, 1, 100000);
    if (!w.ok()) return Fail(w.status().About(Subject::kConfig));
    workers = *w;
  } else {
    auto w = DefaultWorkers();
    if (!w.ok()) return Fail(w.status().About(Subject::kConfig));
    workers = *w;
  }

  auto job = config::LoadJobConfig(job_path);
  if (!job.ok()) return Fail(job.status().About(Subject::kConfig));
  const nlohmann::json& source = split == "eval" ? job->eval_data : job->train_data;
  if (source.is_null()) return Fail(BadFlag("the job has no data." + split + "; try --split train"));
  auto policy = data::ParseShardPolicy(job->auto_shard_policy);
  if (!policy.ok()) return Fail(policy.status().WithContext("data.auto_shard_policy").About(Subject::kConfig));

  data::InspectOptions options;
  options.field = "data." + split;
  options.policy = *policy;
  options.workers = workers;
  options.threads = *threads;
  options.bench_seconds = flags->get("bench") == "true" ? *seconds : 0;
  auto in = data::Inspect(source, job->base_dir, options);
  // A bad entry or sharding is the job's fault (2); anything else concerns the data (3).
  if (!in.ok()) {
    const Status& s = in.status();
    return Fail(s.About(s.code() == Code::kInvalidArgument ? Subject::kConfig : Subject::kData));
  }
  if (flags->get("json") == "true") {
    std::fputs((data::InspectionToJson(*in).dump(2) + "\n").c_str(), stdout);
  } else {
    std::fputs(data::FormatInspection(*in).c_str(), stdout);
  }
  std::fflush(stdout);
  return kExitOk;
}

}  // namespace

int RunData(const std::vector<std::string>& args) {
  if (args.empty() || args[0] != "inspect") {
    return Fail(BadFlag("usage: ringtrain data inspect JOB.json [--split train|eval] [--workers N] [--bench] "
                        "[--threads N] [--seconds S] [--json]"));
  }
  return RunInspect({args.begin() + 1, args.end()});
}

}  // namespace ringtrain::cli
