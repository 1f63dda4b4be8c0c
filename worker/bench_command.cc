// `ringtrain bench allreduce`: wires the benchmark (src/bench) to a cluster -- N local
// processes (--workers) or one task of the TF_CONFIG cluster -- and maps errors to
// exit codes: 1 a wrong result, 2 bad flags, 4 rendezvous, 5 a peer failed.
#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "security_setup.h"
#include "bench/allreduce_bench.h"
#include "bench/report.h"
#include "cluster/cluster_session.h"
#include "commands.h"
#include "common/exit_policy.h"
#include "common/logging.h"
#include "config/settings.h"
#include "config/tf_config.h"
#include "flags.h"
#include "local_cluster.h"

namespace ringtrain::cli {
namespace {

struct BenchFlags {
  int workers = 0;  // 0: one task of the TF_CONFIG cluster
  std::string backend = "auto";
  bench::BenchOptions options;
  bool json = false;
  int timeout_s = 60;
  std::string tf_config;
};

StatusOr<BenchFlags> ParseBenchFlags(const std::vector<std::string>& args) {
  RT_ASSIGN_OR_RETURN(Flags flags, Flags::Parse(args,
                                                {"workers", "backend", "min_bytes", "max_bytes", "iters", "warmup",
                                                 "timeout_s", "tf_config"},
                                                {"json"}));
  BenchFlags f;
  RT_ASSIGN_OR_RETURN(f.workers, flags.get_int("workers", 0, 1, 64));
  f.backend = flags.get("backend", "auto");
  if (f.backend != "auto" && f.backend != "ring" && f.backend != "tcp" && f.backend != "nccl") {
    return InvalidArgumentError("--backend must be auto, ring, tcp or nccl, not '" + f.backend + "'");
  }
  RT_ASSIGN_OR_RETURN(int min_bytes, flags.get_int("min_bytes", 4, 4, 1 << 30));
  RT_ASSIGN_OR_RETURN(int max_bytes, flags.get_int("max_bytes", 64 << 20, 4, 1 << 30));
  f.options.min_bytes = static_cast<size_t>(min_bytes);
  f.options.max_bytes = static_cast<size_t>(max_bytes);
  RT_ASSIGN_OR_RETURN(f.options.iters, flags.get_int("iters", 20, 1, 1000000));
  RT_ASSIGN_OR_RETURN(f.options.warmup, flags.get_int("warmup", 5, 0, 1000000));
  RT_ASSIGN_OR_RETURN(f.timeout_s, flags.get_int("timeout_s", 60, 1, 86400));
  RT_RETURN_IF_ERROR(bench::ValidateOptions(f.options));
  f.json = flags.get("json") == "true";
  f.tf_config = flags.get("tf_config");
  return f;
}

// The same benchmark's flags for each local task.
std::vector<std::string> TaskArgs(const BenchFlags& f) {
  std::vector<std::string> a = {"bench",       "allreduce",
                                "--backend",   f.backend,
                                "--min_bytes", std::to_string(f.options.min_bytes),
                                "--max_bytes", std::to_string(f.options.max_bytes),
                                "--iters",     std::to_string(f.options.iters),
                                "--warmup",    std::to_string(f.options.warmup),
                                "--timeout_s", std::to_string(f.timeout_s)};
  if (f.json) a.push_back("--json");
  return a;
}

int RunLocal(const BenchFlags& f, const std::string& self_path) {
  LocalClusterOptions o;
  o.exe = ResolveExecutable(self_path);
  o.args = TaskArgs(f);
  o.workers = f.workers;
  // Rank 0 prints the rows; the others are heard from only if they fail.
  o.echo = [](int index) { return index == 0 ? Echo::kStdout : Echo::kOnFailure; };
  o.report = stderr;
  o.announce = false;
  o.label = "bench";
  o.grace_s = f.timeout_s + 10;
  auto code = RunLocalCluster(o);
  if (!code.ok()) return cli::Fail(InternalError(code.status().message()));  // could not start the processes
  return *code;
}

// What every task must agree on; the chief refuses a task whose flags differ (naming
// the flag), since mismatched schedules would only end in a deadline.
std::string BenchJobJson(const BenchFlags& f) {
  nlohmann::json j = {{"bench", "allreduce"},
                      {"backend", f.backend},
                      {"min_bytes", f.options.min_bytes},
                      {"max_bytes", f.options.max_bytes},
                      {"iters", f.options.iters},
                      {"warmup", f.options.warmup}};
  return j.dump();
}

int Fail(const std::string& task, const Status& s) { return cli::Fail(s.WithContext(task)); }

int RunBenchTask(const BenchFlags& f) {
  auto settings = config::LoadSettings();
  if (!settings.ok()) return Fail("bench", settings.status().About(Subject::kConfig));
  auto tf_text = config::ReadTfConfigText(f.tf_config);
  if (!tf_text.ok()) {
    return Fail("bench", tf_text.status()
                             .WithContext("without --workers N the benchmark runs as one task of TF_CONFIG's cluster")
                             .About(Subject::kConfig));
  }
  auto spec = config::ParseTfConfig(*tf_text);
  if (!spec.ok()) return Fail("bench", spec.status().About(Subject::kConfig));
  const std::string task = spec->task().ToString();
  SetLogTag(task);
  if (spec->is_evaluator()) {
    return Fail(task, InvalidArgumentError("an evaluator takes no part in collectives; run the benchmark on the chief "
                                           "and worker tasks")
                          .About(Subject::kConfig));
  }

  auto security = LoadSecurity(*settings, *spec, "", "", "");
  if (!security.ok()) return Fail(task, security.status().About(Subject::kConfig));
  auto session = cluster::ClusterSession::Join(*spec, *settings, BenchJobJson(f), *security);
  if (!session.ok()) return Fail(task, session.status());

  collective::CommunicatorOptions copts;
  copts.implementation = f.backend == "nccl" ? collective::Implementation::kNccl
                         : f.backend == "auto" ? collective::Implementation::kAuto
                                               : collective::Implementation::kRing;
  // --backend tcp, or RINGTRAIN_TRANSPORT=tcp as for training workers.
  if (f.backend == "tcp" || settings->transport == "tcp") copts.transport = collective::Transport::kTcp;
  copts.chunk_bytes = static_cast<size_t>(settings->chunk_bytes);
  copts.timeout = std::chrono::seconds(f.timeout_s);
  copts.cluster_secret = security->cluster_secret;
  auto formed = (*session)->Rendezvous(-1, "");
  if (!formed.ok()) return Fail(task, formed.status());
  auto comm = (*session)->CreateCommunicator(copts, formed->generation);
  if (!comm.ok()) return Fail(task, comm.status());
  RT_LOG(INFO) << "benchmarking " << (*comm)->backend_name() << " on " << (*comm)->size() << " ranks";

  bench::RunDescription run;
  run.ranks = (*comm)->size();
  run.backend = (*comm)->backend_name();
  run.requested = f.backend;
  if (run.backend == "RING") run.transport = copts.transport == collective::Transport::kTcp ? "tcp" : "auto";
  run.options = f.options;
  run.options.device_memory = run.backend.rfind("NCCL", 0) == 0;
  const bool report = (*comm)->rank() == 0;
  if (report && !f.json) {
    std::fputs(bench::FormatHeader(run).c_str(), stdout);
    std::fflush(stdout);
  }
  Status st = bench::RunAllReduceBench(comm->get(), run.options, [&](const bench::BenchRow& row) {
    if (!report) return;
    std::fputs((f.json ? bench::FormatJsonRow(row, run) : bench::FormatRow(row)).c_str(), stdout);
    std::fflush(stdout);
  });
  (*session)->Detach();  // before the communicator goes, on every path
  if (!st.ok()) {
    std::string why = (*session)->failure();
    if (!why.empty() && st.message().find(why) == std::string::npos) st = st.WithContext(why);
    // A wrong result (DATA_LOSS) is a bug (1), bad options the configuration's (2), and
    // anything else the peers' (5): the policy's reading of the untagged codes.
    return Fail(task, st);
  }
  comm->reset();
  (*session)->Leave();
  return kExitOk;
}

}  // namespace

int RunBench(const std::vector<std::string>& args, const std::string& self_path) {
  if (!args.empty() && args[0] == "train") {
    return RunBenchTrain(std::vector<std::string>(args.begin() + 1, args.end()), self_path);
  }
  if (!args.empty() && args[0] == "input") return RunBenchInput(std::vector<std::string>(args.begin() + 1, args.end()));
  if (args.empty() || args[0] != "allreduce") {
    return cli::Fail(InvalidArgumentError("usage: ringtrain bench allreduce|train|input [flags]; `ringtrain help` lists the "
                                          "flags")
                         .About(Subject::kConfig));
  }
  auto flags = ParseBenchFlags(std::vector<std::string>(args.begin() + 1, args.end()));
  if (!flags.ok()) return cli::Fail(flags.status().About(Subject::kConfig));
  return flags->workers > 0 ? RunLocal(*flags, self_path) : RunBenchTask(*flags);
}

}  // namespace ringtrain::cli
