// `ringtrain worker`: wires TF_CONFIG, the job, the chief's coordination service, a
// communicator and the trainer together. Each phase tags its errors with what they
// concern; common/exit_policy.h turns them into exit codes.
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <thread>
#include <vector>

#include "cluster/cluster_session.h"
#include "cluster/local_session.h"
#include "collective/communicator.h"
#include "commands.h"
#include "console_setup.h"
#include "common/cpu_binding.h"
#include "common/exit_policy.h"
#include "common/logging.h"
#include "config/job_config.h"
#include "config/settings.h"
#include "config/slurm_resolver.h"
#include "config/tf_config.h"
#include "device/device.h"
#include "engine/factory.h"
#include "env/descriptors.h"
#include "flags.h"
#include "kernels/kernels.h"
#include "metrics_setup.h"
#include "preempt/stop_signals.h"
#include "recovery/training_run.h"
#include "security_setup.h"
#include "status_reporting.h"
#include "task_host.h"
#include "train/trainer.h"

namespace ringtrain::cli {
namespace {

// For error lines: the process's tasks, or on a hosted task's thread that task.
thread_local std::string g_task;

// Enough for the files open at once while writing a backup, a checkpoint and the history.
constexpr int kReservedDescriptors = 16;

// No --tf_config, no TF_CONFIG and no other resolver: a single local worker.
bool RunsAlone(const Flags& flags) {
  if (flags.has("tf_config") || flags.get("cluster_resolver", "tf_config") != "tf_config") return false;
  const char* env = std::getenv("TF_CONFIG");
  return env == nullptr || *env == '\0';
}

int NumThreads(const config::Settings& settings, const config::ClusterSpec& spec, int hosted) {
  if (settings.num_threads > 0) return settings.num_threads;
  // Share the cores among the training tasks on this host: this process gets the share of
  // the tasks it hosts (they take turns with the kernels' pool: kernels/thread_pool.h).
  const std::string& host = spec.address(spec.task()).host;
  int local = 0;
  for (const auto& t : spec.training_tasks()) local += spec.address(t).host == host ? 1 : 0;
  int cores = static_cast<int>(std::thread::hardware_concurrency());
  return std::max(1, cores * hosted / std::max(1, local));
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

// Asked to stop (SIGTERM), and stopped well after a backup: one plain line, not an error.
int Preempted(const std::string& line) {
  std::fprintf(stderr, "ringtrain%s: %s\n", g_task.empty() ? "" : (" " + g_task).c_str(), line.c_str());
  std::fflush(stderr);
  return kExitPreempted;
}

// --host_tasks K: this process runs TF_CONFIG's task and the K-1 training tasks after it,
// each on its own thread (`launch --processes`). 1 by default.
StatusOr<int> HostedTasks(const Flags& flags, const config::ClusterSpec& spec, bool alone) {
  if (!flags.has("host_tasks")) return 1;
  RT_ASSIGN_OR_RETURN(int k, flags.get_int("host_tasks", 1, 1, 64));
  if (k == 1) return 1;
  if (alone || spec.is_evaluator()) {
    return InvalidArgumentError("--host_tasks applies to a training task of a TF_CONFIG cluster, not to " +
                                std::string(alone ? "a worker without TF_CONFIG" : "the evaluator"));
  }
  if (spec.rank() + k > spec.num_workers()) {
    return InvalidArgumentError("--host_tasks " + std::to_string(k) + " from " + spec.task().ToString() + " (rank " +
                                std::to_string(spec.rank()) + ") goes past the cluster's " +
                                std::to_string(spec.num_workers()) + " training tasks; at most " +
                                std::to_string(spec.num_workers() - spec.rank()) + " from there");
  }
  return k;
}

}  // namespace

int Fail(const Status& s) {
  PrintError(s.message().empty() ? s.ToString() : s.message());
  return ExitCodeFor(s);
}

void PrintError(const std::string& message) {
  std::fprintf(stderr, "ringtrain%s: error: %s\n", g_task.empty() ? "" : (" " + g_task).c_str(), message.c_str());
  std::fflush(stderr);
}

namespace {

// What the tasks one process hosts share: everything read and checked before they start.
struct ProcessContext {
  const config::Settings& settings;
  const config::JobConfig& job;
  collective::Implementation impl;
  const cluster::SessionSecurity& security;
  device::DeviceKind device_kind;
  preempt::StopFlag* stop;
  bool alone;
  TaskHost* host;  // null: one task, on the main thread (no elastic hosting)
  // Elastic: where this process's tasks find the coordination service after the chief's
  // is gone for good (shared by the tasks it hosts).
  std::shared_ptr<cluster::CoordinatorAddress> coordinator;
  std::string process_host;  // this process's own task's TF_CONFIG host
};

// One training task, from its rendezvous to its model file: the whole of `worker` for a
// process hosting one task. `metrics` (null: off) is this task's, not shared; `out` is
// where its Keras-style progress goes; `adopted`: hosted for its absent process.
int RunTask(const ProcessContext& ctx, const config::ClusterSpec& spec, TaskMetrics* metrics, FILE* out,
            bool adopted) {
  // A task hosted for its absent process (elastic) ends when that process comes back: its
  // end is a warning in this process's log, not this process's error line.
  auto fail = [&](const Status& s) {
    if (!adopted) return Fail(s);
    RT_LOG(WARNING) << "stopped hosting " << spec.task().ToString() << ": " << s.message();
    return ExitCodeFor(s);
  };
  config::Settings settings = ctx.settings;
  // A task hosted for an absent process on another machine listens for its ring peers on
  // this machine's address, not on its own TF_CONFIG host's.
  if (adopted && settings.data_host.empty()) settings.data_host = ctx.process_host;
  const config::JobConfig& job = ctx.job;
  const int rank = spec.rank();
  const int n = spec.num_workers();
  if (ctx.alone) {
    RT_LOG(INFO) << "TF_CONFIG is not set: training as a single local worker (set TF_CONFIG, or use `ringtrain "
                    "launch --workers N`, for several)";
  } else {
    const config::HostPort chief = spec.address(spec.chief());
    RT_LOG(INFO) << "task " << spec.task().ToString() << " (rank " << rank << " of " << n << "), chief "
                 << spec.chief().ToString() << " at " << chief.ToString();
  }
  auto placement = device::Place(ctx.device_kind, device::LocalRank(LocalIndex(spec)));
  if (!placement.ok()) return fail(placement.status().About(Subject::kConfig));
  RT_LOG(INFO) << "device " << device::DeviceKindName(ctx.device_kind) << ": " << placement->reason;
  const int gpu = placement->gpu ? placement->ordinal : -1;
  train::TrainerOptions topts;
  topts.rank = rank;
  topts.num_workers = n;
  topts.is_chief = spec.is_chief();
  topts.progress_mode = settings.progress;
  topts.out = out;
  topts.new_engine = engine::FactoryFor({gpu});
  const double timeout_s = job.communication.timeout_seconds > 0 ? job.communication.timeout_seconds
                                                                 : settings.collective_timeout_s;
  topts.collective_timeout = std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000));
  topts.memory_bound = config::MemoryBoundOf(settings);
  AttachMetrics(metrics, &topts);
  StatusReporting status_reporting(settings, &topts);  // outlives the session
  auto trainer = train::Trainer::Create(job, topts);
  if (!trainer.ok()) return fail(trainer.status());
  if (spec.is_chief()) std::fputs((*trainer)->model().Summary().c_str(), stdout);

  std::unique_ptr<cluster::Session> session;
  if (ctx.alone) {
    session = std::make_unique<cluster::LocalSession>();
  } else {
    cluster::SessionElastic elastic;
    if (job.elastic.enabled) {
      elastic.policy = {true, job.elastic.min_workers,
                        std::chrono::milliseconds(static_cast<int64_t>(job.elastic.wait_s * 1000))};
      elastic.coordinator = ctx.coordinator;
      if (ctx.host != nullptr) {
        elastic.on_adopt = [host = ctx.host, tasks = spec.training_tasks()](const std::string& task) {
          for (size_t r = 0; r < tasks.size(); ++r) {
            if (tasks[r].ToString() == task) host->Start(static_cast<int>(r), /*adopted=*/true);
          }
        };
      }
    }
    auto joined = cluster::ClusterSession::Join(spec, settings, job.CanonicalJson(), ctx.security,
                                                EvaluatorStatusRows(spec, job), elastic);
    if (!joined.ok()) return fail(joined.status());
    if (metrics != nullptr) {
      cluster::ClusterSession* cs = joined->get();
      metrics->SetStragglerScoreSource([cs] { return cs->straggler_score(); });
      if (spec.is_chief()) ServeClusterStatus(metrics, spec, ctx.security);
    }
    session = std::move(joined).value();
  }
  // The score source reads the session: it goes before the session does.
  struct ForgetSession {
    TaskMetrics* metrics;
    ~ForgetSession() {
      if (metrics != nullptr) metrics->SetStragglerScoreSource(nullptr);
    }
  } forget_session{metrics};
  status_reporting.Attach(session.get());

  recovery::RunOptions run_opts;
  run_opts.comm.implementation = ctx.impl;
  run_opts.comm.timeout = topts.collective_timeout;
  run_opts.comm.transport = settings.transport == "tcp" ? collective::Transport::kTcp : collective::Transport::kAuto;
  run_opts.comm.chunk_bytes = static_cast<size_t>(settings.chunk_bytes);
  run_opts.comm.gpu_device = gpu >= 0 ? gpu : collective::CommunicatorOptions::kCpuRank;
  run_opts.comm.cluster_secret = ctx.security.cluster_secret;
  run_opts.mode = job.recovery;
  run_opts.backup = job.backup;
  run_opts.evaluate = !job.eval_data.is_null();
  run_opts.shutdown_timeout_s = settings.shutdown_timeout_s;
  AttachMetrics(metrics, &run_opts);
  status_reporting.Attach(&run_opts);
  // SIGTERM/SIGINT stop the cluster at a step boundary after a backup (exit 7).
  (*trainer)->set_stop_flag(ctx.stop);
  recovery::TrainingRun run(trainer->get(), session.get(), run_opts);
  recovery::RunResult result = run.Train();
  if (result.preempted) {
    status_reporting.SetState("preempted");  // the chief's status and events say so if a heartbeat still goes out
    return Preempted(result.status.message());
  }
  if (!result.status.ok()) return fail(result.status);
  Status st = (*trainer)->SaveModel();
  if (!st.ok()) return fail(st);  // a storage error naming save_model

  run.Finish(session->Leave());
  RT_LOG(INFO) << "done" << (result.recoveries > 0 ? " (recovered in place from " + std::to_string(result.recoveries) +
                                                         " failed generation(s))"
                                                   : std::string());
  return kExitOk;
}

// The tasks this process hosts, each on its own thread with its own log tag, as separate
// processes would run them: those it was started with and, under an elastic job, those
// the chief's service hands it. The first task's progress goes to stdout (the chief's,
// when the process hosts it); the others' would repeat it.
int RunHostedTasks(ProcessContext ctx, const config::ClusterSpec& spec, int hosted, TaskMetrics* metrics) {
  FILE* quiet = std::fopen("/dev/null", "we");
  const int first = spec.rank();
  TaskHost host([&](int rank, bool adopted) {
    const config::ClusterSpec task = spec.AsTrainingTask(rank);
    g_task = task.task().ToString();
    SetThreadLogTag(g_task);
    const bool lead = rank == first && !adopted;
    return RunTask(ctx, task, lead ? metrics : nullptr, lead || quiet == nullptr ? stdout : quiet, adopted);
  });
  ctx.host = &host;
  for (int i = 0; i < hosted; ++i) host.Start(first + i, /*adopted=*/false);
  const int code = host.Wait();
  if (quiet != nullptr) std::fclose(quiet);
  return code;
}

}  // namespace

int RunWorker(const std::vector<std::string>& args) {
  auto flags = Flags::Parse(
      args, {"job", "tf_config", "cluster_resolver", "base_port", "tls_cert", "tls_key", "tls_ca", kLogFileFlag,
              "metrics_port", "eval_timeout_s", "eval_history", "host_tasks"},
      {kVerboseFlag});
  if (!flags.ok()) return Fail(flags.status().About(Subject::kConfig));
  if (Status st = SetUpTaskLogging(*flags); !st.ok()) return Fail(st);
  if (!flags->has("job")) return Fail(InvalidArgumentError("--job JOB.json is required").About(Subject::kConfig));
  auto settings = config::LoadSettings();
  if (!settings.ok()) return Fail(settings.status().About(Subject::kConfig));
  // The cluster comes from TF_CONFIG (the environment or --tf_config), or is built from
  // the Slurm step; either way it is parsed as TF_CONFIG text. Without either, the
  // worker trains alone, as TensorFlow's strategy does.
  const bool alone = RunsAlone(*flags);
  auto spec = [&]() -> StatusOr<config::ClusterSpec> {
    if (alone) return config::ClusterSpec::SingleLocalWorker();
    const std::string resolver = flags->get("cluster_resolver", "tf_config");
    if (resolver == "tf_config") {
      if (flags->has("base_port")) {
        return InvalidArgumentError("--base_port applies only to --cluster_resolver slurm; with TF_CONFIG the ports "
                                    "are in the cluster's addresses");
      }
      RT_ASSIGN_OR_RETURN(std::string text, config::ReadTfConfigText(flags->get("tf_config")));
      return config::ParseTfConfig(text);
    }
    if (resolver == "slurm") {
      if (flags->has("tf_config")) {
        return InvalidArgumentError("--tf_config cannot be used with --cluster_resolver slurm, which builds the "
                                    "cluster from the Slurm step; drop one of them");
      }
      RT_ASSIGN_OR_RETURN(int base_port, flags->get_int("base_port", 8888, 1, 65535));
      RT_ASSIGN_OR_RETURN(std::string text,
                          config::SlurmTfConfigText(config::SlurmEnvironmentFromProcess(), base_port));
      return config::ParseTfConfig(text);
    }
    return InvalidArgumentError("--cluster_resolver must be tf_config or slurm, not '" + resolver + "'");
  }();
  if (!spec.ok()) return Fail(spec.status().About(Subject::kConfig));
  auto hosted = HostedTasks(*flags, *spec, alone);
  if (!hosted.ok()) return Fail(hosted.status().About(Subject::kConfig));
  g_task = *hosted == 1 ? spec->task().ToString()
                        : spec->task().ToString() + ".." + spec->training_tasks()[spec->rank() + *hosted - 1].ToString();
  SetLogTag(g_task);
  // Not part of the ring: it only reads the checkpoints training writes (worker/evaluator_command.cc).
  if (spec->is_evaluator()) return RunEvaluatorTask(*flags, *spec, *settings);
  if (Status s = RefuseEvaluatorFlags(*flags); !s.ok()) return Fail(s);
  auto security = LoadSecurity(*settings, *spec, flags->get("tls_cert"), flags->get("tls_key"), flags->get("tls_ca"));
  if (!security.ok()) return Fail(security.status().About(Subject::kConfig));
  auto job = config::LoadJobConfig(flags->get("job"));
  if (!job.ok()) return Fail(job.status().About(Subject::kConfig));
  auto impl = collective::ParseImplementation(job->communication.implementation);
  if (!impl.ok()) return Fail(impl.status().WithContext("job: communication.implementation").About(Subject::kConfig));
  // Elastic keeps the bytes through the RING's fixed order of additions (collective/sum_order.h);
  // NCCL's order depends on its topology, and a hosted task would need a GPU of its own.
  if (job->elastic.enabled && *impl == collective::Implementation::kNccl) {
    return Fail(InvalidArgumentError("job: 'elastic' needs the RING all-reduce (communication.implementation \"RING\" "
                                     "or \"AUTO\"): NCCL's order of additions depends on its topology, so the "
                                     "bytes would not be kept, and a hosted task would need a GPU of its own")
                    .About(Subject::kConfig));
  }
  if (job->elastic.enabled && *impl == collective::Implementation::kAuto) {
    RT_LOG(INFO) << "elastic job: communication AUTO -> RING (its fixed order of additions keeps the bytes when "
                    "tasks move between processes)";
    impl = collective::Implementation::kRing;
  }
  if (job->elastic.enabled && job->elastic.min_workers > spec->num_workers()) {
    return Fail(InvalidArgumentError("job: elastic.min_workers is " + std::to_string(job->elastic.min_workers) +
                                     " but TF_CONFIG has " + std::to_string(spec->num_workers()) +
                                     " training tasks; give at most that many")
                    .About(Subject::kConfig));
  }

  if (*hosted > 1) {
    RT_LOG(INFO) << "this process hosts " << *hosted << " tasks, " << g_task << " (--host_tasks), each on its own thread";
  }
  RT_LOG(INFO) << config::Describe(*settings);
  // A flood of connections must not leave the chief without descriptors for its backups.
  RT_LOG(INFO) << env::Describe(env::RaiseOpenFileLimit()) << "; "
               << env::ReserveDescriptors(kReservedDescriptors * *hosted)
               << " descriptors kept in reserve for output files";

  // Everything that can be checked locally is checked before anything starts.
  kernels::SetNumThreads(NumThreads(*settings, *spec, *hosted));
  RT_LOG(INFO) << kernels::NumThreads() << " compute thread(s) on CPUs " << DescribeCpus(AllowedCpus())
               << " (its affinity; launch --bind_to)";
  auto device_kind = device::ParseDeviceKind(job->device);
  if (!device_kind.ok()) return Fail(device_kind.status().WithContext("job: device").About(Subject::kConfig));
  auto metrics = StartMetrics(*flags, *settings, *spec, alone);  // --metrics_port (metrics_setup.h)
  if (!metrics.ok()) return Fail(metrics.status());
  // From here on SIGTERM/SIGINT stop the cluster at a step boundary after a backup (exit 7);
  // before training starts they end the process at once (preempt/stop_signals.h).
  auto stop = preempt::InstallStopSignals(settings->preempt_grace_s);
  if (!stop.ok()) return Fail(stop.status());
  const ProcessContext ctx{*settings, *job, *impl, *security, *device_kind, *stop, alone,
                          /*host=*/nullptr, std::make_shared<cluster::CoordinatorAddress>(),
                          spec->address(spec->task()).host};
  // An elastic job may hand this process absent tasks to host: its tasks run on threads.
  if (*hosted == 1 && !(job->elastic.enabled && !alone)) return RunTask(ctx, *spec, metrics->get(), stdout, false);
  return RunHostedTasks(ctx, *spec, *hosted, metrics->get());
}

}  // namespace ringtrain::cli
