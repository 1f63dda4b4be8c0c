// `ringtrain bench train --job J --workers N`: trains the job on N local workers (as
// `ringtrain launch` does) with a private history file and no outputs, then prints
// images/s, step time and the share of it spent waiting on communication, the first
// epoch excluded as warm-up (src/bench/train_report.h). Exit codes are the workers'.
// --bind_to core|none as launch's (default core: each worker on its own CPUs).
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "bench/train_report.h"
#include "commands.h"
#include "common/exit_policy.h"
#include "common/file.h"
#include "config/job_config.h"
#include "config/settings.h"
#include "env/file_util.h"
#include "flags.h"
#include "local_cluster.h"
#include "train/memory_bound.h"

namespace ringtrain::cli {
namespace {

// Removes the temporary job and history files on every way out.
struct TempFiles {
  std::vector<std::string> paths;
  ~TempFiles() {
    std::error_code ec;
    for (const auto& p : paths) std::filesystem::remove(p, ec);
  }
};

}  // namespace

int RunBenchTrain(const std::vector<std::string>& args, const std::string& self_path) {
  auto flags = Flags::Parse(args, {"job", "workers", "epochs", "warmup_epochs", "base_port", "device", "bind_to"}, {});
  if (!flags.ok()) return Fail(flags.status().About(Subject::kConfig));
  auto workers = flags->get_int("workers", 2, 1, 64);
  auto epochs = flags->get_int("epochs", 0, 0, 100000);
  auto warmup = flags->get_int("warmup_epochs", 1, 0, 100000);
  auto base_port = flags->get_int("base_port", 0, 0, 65535 - 64);
  auto bind = ParseCpuBinding(flags->get("bind_to", "core"));
  for (const Status& s : {workers.status(), epochs.status(), warmup.status(), base_port.status(), bind.status()}) {
    if (!s.ok()) return Fail(s.About(Subject::kConfig));
  }
  if (!flags->has("job")) return Fail(InvalidArgumentError("--job JOB.json is required").About(Subject::kConfig));
  const std::string job_path = flags->get("job");
  auto job = config::LoadJobConfig(job_path);
  if (!job.ok()) return Fail(job.status().About(Subject::kConfig));

  // The benchmark measures training only: no saved model, checkpoints, backups,
  // TensorBoard or validation. The copy sits beside the job so relative paths resolve.
  nlohmann::json bench_job = job->raw;
  for (const char* key : {"save_model", "model_checkpoint", "backup_and_restore", "tensorboard_dir", "validation_freq"}) {
    bench_job.erase(key);
  }
  if (*epochs > 0) bench_job["epochs"] = *epochs;
  if (flags->has("device")) bench_job["device"] = flags->get("device");  // checked by the job parser below
  TempFiles temp;
  const std::filesystem::path dir = std::filesystem::path(job_path).parent_path();
  const std::string stem = ".ringtrain-bench-" + std::to_string(::getpid());
  const std::string tmp_job = (dir / (stem + ".json")).string();
  const std::string history = (std::filesystem::temp_directory_path() / (stem + "-history.jsonl")).string();
  bench_job["history_file"] = history;
  temp.paths = {tmp_job, history};
  auto checked = config::ParseJobConfig(bench_job.dump(), dir.string());
  if (!checked.ok()) return Fail(checked.status().About(Subject::kConfig));
  // The workers share this machine: the job must fit the bound that many times over.
  auto settings = config::LoadSettings();
  if (!settings.ok()) return Fail(settings.status().About(Subject::kConfig));
  Status fits = train::CheckTrainingMemory(*checked, 0, *workers, config::MemoryBoundOf(*settings), *workers);
  if (!fits.ok()) return Fail(fits.About(Subject::kConfig));
  Status written = env::WriteFileAtomically(env::Default(), tmp_job, bench_job.dump(2));
  if (!written.ok()) return Fail(written.WithContext("writing the benchmark's copy of the job").About(Subject::kStorage));

  LocalClusterOptions options;
  options.exe = ResolveExecutable(self_path);
  options.args = {"worker", "--job", tmp_job};
  options.workers = *workers;
  options.base_port = *base_port;
  options.bind = *bind;
  options.echo = [](int) { return Echo::kOnFailure; };
  options.announce = false;
  options.label = "bench train";
  std::fprintf(stdout, "# training %s on %d local worker(s)...\n", job_path.c_str(), *workers);
  std::fflush(stdout);
  auto code = RunLocalCluster(options);
  if (!code.ok()) return Fail(InternalError(code.status().message()));  // could not start the processes
  if (*code != kExitOk) return *code;

  auto text = ReadFile(history);
  if (!text.ok()) return Fail(InternalError("reading the chief's history: " + text.status().message()));
  auto records = bench::ParseHistory(*text);
  if (!records.ok()) return Fail(InternalError(records.status().message()));
  auto summary = bench::SummarizeTraining(*records, *warmup);
  if (!summary.ok()) return Fail(summary.status().About(Subject::kConfig));
  std::fputs(bench::FormatTrainSummary(*summary, job_path, *workers).c_str(), stdout);
  std::fflush(stdout);
  return kExitOk;
}

}  // namespace ringtrain::cli
