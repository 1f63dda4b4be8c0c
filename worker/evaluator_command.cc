// The evaluator task of `ringtrain worker`: a TF_CONFIG task {"type": "evaluator"} runs
// evaluator::SidecarEvaluator over the checkpoints the training tasks write. It joins no
// ring and never calls the coordination service (the chief expects only the training
// tasks), so it needs no cluster secret and training never waits for it.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "commands.h"
#include "common/exit_policy.h"
#include "common/logging.h"
#include "config/job_config.h"
#include "evaluator/eval_status.h"
#include "evaluator/sidecar_evaluator.h"
#include "flags.h"
#include "kernels/kernels.h"

namespace ringtrain::cli {
namespace {

// --eval_timeout_s overrides RINGTRAIN_EVALUATOR_TIMEOUT_S.
StatusOr<double> TimeoutOf(const Flags& flags, const config::Settings& settings) {
  if (!flags.has("eval_timeout_s")) return settings.evaluator_timeout_s;
  const std::string text = flags.get("eval_timeout_s");
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(v) || v < 0.1 || v > 366.0 * 86400) {
    return BadFlag("--eval_timeout_s must be a number of seconds from 0.1 to a year, not '" + text + "'");
  }
  return v;
}

// The evaluator shares its host with training tasks: it takes one share of the cores.
int EvaluatorThreads(const config::Settings& settings, const config::ClusterSpec& spec) {
  if (settings.num_threads > 0) return settings.num_threads;
  const std::string& host = spec.address(spec.task()).host;
  int local = 1;
  for (const auto& t : spec.training_tasks()) local += spec.address(t).host == host ? 1 : 0;
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()) / local);
}

}  // namespace

int RunEvaluatorTask(const Flags& flags, const config::ClusterSpec& spec, const config::Settings& settings) {
  auto timeout = TimeoutOf(flags, settings);
  if (!timeout.ok()) return Fail(timeout.status());
  auto job = config::LoadJobConfig(flags.get("job"));
  if (!job.ok()) return Fail(job.status().About(Subject::kConfig));
  kernels::SetNumThreads(EvaluatorThreads(settings, spec));
  RT_LOG(INFO) << "task " << spec.task().ToString() << ": the evaluator of a cluster of " << spec.num_workers()
               << " training task(s); it watches "
               << (job->model_checkpoint.empty() ? "the backups in " + job->backup.backup_dir
                                                 : "the model checkpoints " + job->model_checkpoint);
  RT_LOG(INFO) << config::Describe(settings);

  evaluator::EvaluatorOptions options;
  options.num_workers = spec.num_workers();
  options.history_path = flags.has("eval_history") ? flags.get("eval_history") : std::string();
  options.timeout_s = *timeout;
  options.memory_bound = config::MemoryBoundOf(settings);
  auto e = evaluator::SidecarEvaluator::Create(*job, options);
  if (!e.ok()) return Fail(e.status());
  RT_LOG(INFO) << "evaluator: watching; its history is " << (*e)->history().path();
  Status s = (*e)->Run();
  if (!s.ok()) return Fail(s);
  RT_LOG(INFO) << "evaluator done: " << (*e)->history().records().size() << " checkpoint(s) in "
               << (*e)->history().path();
  return kExitOk;
}

std::function<void(coordination::GetStatusResponse*)> EvaluatorStatusRows(const config::ClusterSpec& spec,
                                                                         const config::JobConfig& job) {
  auto it = spec.jobs().find("evaluator");
  if (it == spec.jobs().end() || it->second.empty()) return nullptr;
  std::vector<std::pair<std::string, std::string>> tasks;  // name, host:port
  for (size_t i = 0; i < it->second.size(); ++i) {
    tasks.emplace_back("evaluator:" + std::to_string(i), it->second[i].ToString());
  }
  const std::string history = evaluator::DefaultHistoryPath(job);
  return [tasks, history](coordination::GetStatusResponse* r) {
    for (const auto& [name, host] : tasks) *r->add_tasks() = evaluator::EvaluatorStatusRow(name, host, history);
  };
}

Status RefuseEvaluatorFlags(const Flags& flags) {
  for (const char* name : {"eval_timeout_s", "eval_history"}) {
    if (flags.has(name)) {
      return BadFlag(std::string("--") + name + " applies only to the evaluator task (TF_CONFIG task type "
                     "\"evaluator\"); drop it for chief and worker tasks");
    }
  }
  return Status::Ok();
}

}  // namespace ringtrain::cli
