// `ringtrain worker`: wires TF_CONFIG, the job, the chief's coordination service, a
// communicator and the trainer together, and maps each phase's errors to exit codes.
#include <cstdio>
#include <optional>
#include <thread>
#include <vector>

#include "collective/communicator.h"
#include "cluster/cluster_session.h"
#include "commands.h"
#include "common/exit_codes.h"
#include "common/exit_policy.h"
#include "common/logging.h"
#include "config/job_config.h"
#include "config/settings.h"
#include "config/slurm_resolver.h"
#include "config/tf_config.h"
#include "device/device.h"
#include "flags.h"
#include "security_setup.h"
#include "recovery/training_run.h"
#include "train/trainer.h"

namespace ringtrain::cli {
namespace {

std::string g_task;  // for error lines; set once before threads start

int DataExitCode(const Status& s) {
  if (s.subject() != Subject::kUnknown) return ExitCodeFor(s);
  if (s.code() == Code::kNotFound || s.code() == Code::kDataLoss) return kExitBadData;
  if (s.code() == Code::kInvalidArgument) return kExitBadConfig;
  return kExitInternal;
}

int NumThreads(const config::Settings& settings, const config::ClusterSpec& spec) {
  if (settings.num_threads > 0) return settings.num_threads;
  // Share the cores among the training tasks on this host.
  const std::string& host = spec.address(spec.task()).host;
  int local = 0;
  for (const auto& t : spec.training_tasks()) local += spec.address(t).host == host ? 1 : 0;
  int cores = static_cast<int>(std::thread::hardware_concurrency());
  return std::max(1, cores / std::max(1, local));
}

// This task's index among the training tasks on its host, in rank order: what picks
// its GPU unless the scheduler says (LOCAL_RANK, SLURM_LOCALID, ...).
int LocalIndex(const config::ClusterSpec& spec) {
  const std::string& host = spec.address(spec.task()).host;
  int local = 0;
  for (const auto& t : spec.training_tasks()) {
    if (t == spec.task()) break;
    local += spec.address(t).host == host ? 1 : 0;
  }
  return local;
}

}  // namespace

int Fail(int code, const Status& s) {
  PrintError(s.message().empty() ? s.ToString() : s.message());
  return code;
}

void PrintError(const std::string& message) {
  std::fprintf(stderr, "ringtrain%s: error: %s\n", g_task.empty() ? "" : (" " + g_task).c_str(), message.c_str());
  std::fflush(stderr);
}

int RunWorker(const std::vector<std::string>& args) {
  auto flags =
      Flags::Parse(args, {"job", "tf_config", "cluster_resolver", "base_port", "tls_cert", "tls_key", "tls_ca"});
  if (!flags.ok()) return Fail(kExitBadConfig, flags.status());
  if (!flags->has("job")) return Fail(kExitBadConfig, InvalidArgumentError("--job JOB.json is required"));
  auto settings = config::LoadSettings();
  if (!settings.ok()) return Fail(kExitBadConfig, settings.status());
  // The cluster comes from TF_CONFIG (the environment or --tf_config), or is built from
  // the Slurm step; either way it is parsed as TF_CONFIG text below.
  auto tf_text = [&]() -> StatusOr<std::string> {
    const std::string resolver = flags->get("cluster_resolver", "tf_config");
    if (resolver == "tf_config") {
      if (flags->has("base_port")) {
        return InvalidArgumentError("--base_port applies only to --cluster_resolver slurm; with TF_CONFIG the ports "
                                    "are in the cluster's addresses");
      }
      return config::ReadTfConfigText(flags->get("tf_config"));
    }
    if (resolver == "slurm") {
      if (flags->has("tf_config")) {
        return InvalidArgumentError("--tf_config cannot be used with --cluster_resolver slurm, which builds the "
                                    "cluster from the Slurm step; drop one of them");
      }
      RT_ASSIGN_OR_RETURN(int base_port, flags->get_int("base_port", 8888, 1, 65535));
      return config::SlurmTfConfigText(config::SlurmEnvironmentFromProcess(), base_port);
    }
    return InvalidArgumentError("--cluster_resolver must be tf_config or slurm, not '" + resolver + "'");
  }();
  if (!tf_text.ok()) return Fail(kExitBadConfig, tf_text.status());
  auto spec = config::ParseTfConfig(*tf_text);
  if (!spec.ok()) return Fail(kExitBadConfig, spec.status());
  g_task = spec->task().ToString();
  SetLogTag(g_task);
  if (spec->is_evaluator()) {
    return Fail(kExitBadConfig, UnimplementedError("the evaluator task is not supported by this version; run only "
                                                   "chief and worker tasks and evaluate the saved model afterwards"));
  }
  auto security = LoadSecurity(*settings, *spec, flags->get("tls_cert"), flags->get("tls_key"), flags->get("tls_ca"));
  if (!security.ok()) return Fail(kExitBadConfig, security.status());
  auto job = config::LoadJobConfig(flags->get("job"));
  if (!job.ok()) return Fail(kExitBadConfig, job.status());
  auto impl = collective::ParseImplementation(job->communication.implementation);
  if (!impl.ok()) return Fail(kExitBadConfig, impl.status().WithContext("job: communication.implementation"));

  const int rank = spec->rank();
  const int n = spec->num_workers();
  const config::HostPort chief = spec->address(spec->chief());
  RT_LOG(INFO) << "task " << g_task << " (rank " << rank << " of " << n << "), chief " << spec->chief().ToString()
               << " at " << chief.ToString();
  RT_LOG(INFO) << config::Describe(*settings);

  // Everything that can be checked locally is checked before anything starts.
  train::TrainerOptions topts;
  topts.rank = rank;
  topts.num_workers = n;
  topts.is_chief = spec->is_chief();
  topts.progress_mode = settings->progress;
  topts.num_threads = NumThreads(*settings, *spec);
  auto device_kind = device::ParseDeviceKind(job->device);
  if (!device_kind.ok()) return Fail(kExitBadConfig, device_kind.status().WithContext("job: device"));
  auto placement = device::Place(*device_kind, device::LocalRank(LocalIndex(*spec)));
  if (!placement.ok()) return Fail(kExitBadConfig, placement.status());
  RT_LOG(INFO) << "device " << device::DeviceKindName(*device_kind) << ": " << placement->reason;
  topts.gpu = placement->gpu ? placement->ordinal : -1;
  const double timeout_s = job->communication.timeout_seconds > 0 ? job->communication.timeout_seconds
                                                                  : settings->collective_timeout_s;
  topts.collective_timeout = std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000));
  topts.memory_bound = config::MemoryBoundOf(*settings);
  auto trainer = train::Trainer::Create(*job, topts);
  if (!trainer.ok()) return Fail(DataExitCode(trainer.status()), trainer.status());
  if (spec->is_chief()) std::fputs((*trainer)->model().Summary().c_str(), stdout);

  int code = kExitOk;
  auto session = cluster::ClusterSession::Join(*spec, *settings, job->CanonicalJson(), &code, *security);
  if (!session.ok()) return Fail(code, session.status());

  recovery::RunOptions run_opts;
  run_opts.comm.implementation = *impl;
  run_opts.comm.timeout = topts.collective_timeout;
  run_opts.comm.transport = settings->transport == "tcp" ? collective::Transport::kTcp : collective::Transport::kAuto;
  run_opts.comm.chunk_bytes = static_cast<size_t>(settings->chunk_bytes);
  run_opts.comm.gpu_device = topts.gpu >= 0 ? topts.gpu : collective::CommunicatorOptions::kCpuRank;
  run_opts.comm.cluster_secret = security->cluster_secret;
  run_opts.mode = job->recovery;
  run_opts.backup = job->backup;
  run_opts.evaluate = !job->eval_data.is_null();
  run_opts.shutdown_timeout_s = settings->shutdown_timeout_s;
  recovery::TrainingRun run(trainer->get(), session->get(), run_opts);
  recovery::RunResult result = run.Train();
  if (result.exit_code != kExitOk) return Fail(result.exit_code, result.status);
  Status st = (*trainer)->SaveModel();
  if (!st.ok()) return Fail(kExitCheckpoint, st);

  run.Finish((*session)->Leave());
  RT_LOG(INFO) << "done" << (result.recoveries > 0 ? " (recovered in place from " + std::to_string(result.recoveries) +
                                                         " failed generation(s))"
                                                   : std::string());
  return kExitOk;
}

}  // namespace ringtrain::cli
