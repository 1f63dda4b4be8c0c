// The subcommands of the `ringtrain` executable. Each returns a process exit code
// (common/exit_codes.h), decided for any error by common/exit_policy.h from what the
// error concerns, and prints one clear line for it.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "common/status.h"
#include "config/job_config.h"
#include "config/settings.h"
#include "config/tf_config.h"
#include "proto/coordination.pb.h"

namespace ringtrain::cli {

class Flags;

// `ringtrain worker --job JOB.json [--tf_config FILE|JSON]`: one task of a cluster.
int RunWorker(const std::vector<std::string>& args);
// `ringtrain status`: the chief's GetStatus as a table or JSON (status_command.cc).
int RunStatus(const std::vector<std::string>& args);
// The chief's "host:port" for the commands that ask it (status, submit, jobs, logs,
// cancel): --chief, else the chief of --tf_config or TF_CONFIG (which need not name the
// caller's task).
StatusOr<std::string> ChiefAddress(const Flags& flags);
// `ringtrain serve` (serve_command.cc) and the commands that talk to its queue
// (job_commands.cc): submit, jobs, logs, cancel.
int RunServe(const std::vector<std::string>& args, const std::string& self_path);
int RunJobCommand(const std::string& command, const std::vector<std::string>& args);
// The evaluator task of `ringtrain worker` (TF_CONFIG task type "evaluator"): evaluates
// every checkpoint training writes (worker/evaluator_command.cc). `flags` are the
// worker's; --eval_timeout_s and --eval_history are the evaluator's own.
int RunEvaluatorTask(const Flags& flags, const config::ClusterSpec& spec, const config::Settings& settings);
// INVALID_ARGUMENT about kConfig when a chief or worker task is given the evaluator's flags.
Status RefuseEvaluatorFlags(const Flags& flags);
// For the chief's GetStatus: a row per evaluator task in TF_CONFIG, read from the evaluator's
// history at the job's default path (evaluator/eval_status.h); null without an evaluator.
std::function<void(coordination::GetStatusResponse*)> EvaluatorStatusRows(const config::ClusterSpec& spec,
                                                                         const config::JobConfig& job);
// `ringtrain launch --workers N --job JOB.json`: N local workers on loopback.
int RunLaunch(const std::vector<std::string>& args, const std::string& self_path);

// `ringtrain bench allreduce [--workers N] ...`: the all-reduce benchmark, on N local
// processes or as one task of the TF_CONFIG cluster.
int RunBench(const std::vector<std::string>& args, const std::string& self_path);
// `ringtrain bench train --job J --workers N`: training throughput (worker/bench_train_command.cc).
int RunBenchTrain(const std::vector<std::string>& args, const std::string& self_path);

// `ringtrain bench input`: ringtrain's input pipeline against PyTorch's DataLoader over a
// JPEG class folder, and the TFRecord reader's speed (worker/bench_input_command.cc).
int RunBenchInput(const std::vector<std::string>& args);
// `ringtrain data inspect JOB`: what a source holds, its shards and its decode speed
// (worker/data_command.cc).
int RunData(const std::vector<std::string>& args);

// `ringtrain evaluate --job JOB.json --model M.safetensors`: loss and accuracy of a
// saved model on a whole data split (worker/evaluate_command.cc).
int RunEvaluate(const std::vector<std::string>& args);
// `ringtrain predict --job JOB.json --model M.safetensors`: one prediction per example.
int RunPredict(const std::vector<std::string>& args);

// `ringtrain summary FILE [--json]`: Keras' model.summary() of a job's or a model file's
// model, with no data (worker/summary_command.cc).
int RunSummary(const std::vector<std::string>& args);

// `ringtrain version` / `--version`: the version and what the binary was built with;
// compile-time facts only, no GPU is touched. `ringtrain info [--json]`: the driver,
// GPUs, loaded library versions, CPU and the "auto" placement found at run time
// (worker/info_command.cc). Both exit 0 with or without a GPU.
int RunVersion(const std::vector<std::string>& args);
int RunInfo(const std::vector<std::string>& args);

// Prints "ringtrain: error: <message>" (prefixed with the task when known) to stderr.
void PrintError(const std::string& message);
// PrintError(s's message), then returns ExitCodeFor(s). Tag the status with what it
// concerns first: `return Fail(status.About(Subject::kConfig));`.
int Fail(const Status& s);

}  // namespace ringtrain::cli
