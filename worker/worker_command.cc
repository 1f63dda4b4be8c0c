// `ringtrain worker`: wires TF_CONFIG, the job, the chief's coordination service, a
// communicator and the trainer together, and maps each phase's errors to exit codes.
#include <cstdio>
#include <mutex>
#include <random>
#include <thread>

#include "collective/communicator.h"
#include "commands.h"
#include "common/exit_codes.h"
#include "common/logging.h"
#include "config/job_config.h"
#include "config/settings.h"
#include "config/tf_config.h"
#include "coordination/coordination_client.h"
#include "coordination/coordination_server.h"
#include "flags.h"
#include "train/trainer.h"

namespace ringtrain::cli {
namespace {

std::string g_task;  // for error lines; set once before threads start

// Lets the heartbeat thread abort the communicator, which may not exist yet.
class FailureRelay {
 public:
  void Fail(const std::string& why) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!failure_.empty()) return;
    failure_ = why;
    RT_LOG(ERROR) << "cluster failure: " << why;
    if (comm_ != nullptr) comm_->Abort(why);
  }
  void Attach(Communicator* comm) {
    std::lock_guard<std::mutex> lock(mu_);
    comm_ = comm;
    if (comm_ != nullptr && !failure_.empty()) comm_->Abort(failure_);
  }
  std::string failure() {
    std::lock_guard<std::mutex> lock(mu_);
    return failure_;
  }

 private:
  std::mutex mu_;
  Communicator* comm_ = nullptr;  // not owned
  std::string failure_;
};

int Fail(int code, const Status& s) {
  PrintError(s.message().empty() ? s.ToString() : s.message());
  return code;
}

int DataExitCode(const Status& s) {
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

}  // namespace

void PrintError(const std::string& message) {
  std::fprintf(stderr, "ringtrain%s: error: %s\n", g_task.empty() ? "" : (" " + g_task).c_str(), message.c_str());
  std::fflush(stderr);
}

int RunWorker(const std::vector<std::string>& args) {
  auto flags = Flags::Parse(args, {"job", "tf_config"});
  if (!flags.ok()) return Fail(kExitBadConfig, flags.status());
  if (!flags->has("job")) return Fail(kExitBadConfig, InvalidArgumentError("--job JOB.json is required"));
  auto settings = config::LoadSettings();
  if (!settings.ok()) return Fail(kExitBadConfig, settings.status());
  auto tf_text = config::ReadTfConfigText(flags->get("tf_config"));
  if (!tf_text.ok()) return Fail(kExitBadConfig, tf_text.status());
  auto spec = config::ParseTfConfig(*tf_text);
  if (!spec.ok()) return Fail(kExitBadConfig, spec.status());
  g_task = spec->task().ToString();
  SetLogTag(g_task);
  if (spec->is_evaluator()) {
    return Fail(kExitBadConfig, UnimplementedError("the evaluator task is not supported by this version; run only "
                                                   "chief and worker tasks and evaluate the saved model afterwards"));
  }
  auto job = config::LoadJobConfig(flags->get("job"));
  if (!job.ok()) return Fail(kExitBadConfig, job.status());
  auto impl = ParseImplementation(job->communication.implementation);
  if (!impl.ok()) return Fail(kExitBadConfig, impl.status().WithContext("job: communication.implementation"));

  const int rank = spec->rank();
  const int n = spec->num_workers();
  const config::HostPort self = spec->address(spec->task());
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
  const double timeout_s = job->communication.timeout_seconds > 0 ? job->communication.timeout_seconds
                                                                  : settings->collective_timeout_s;
  topts.collective_timeout = std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000));
  auto trainer = train::Trainer::Create(*job, topts);
  if (!trainer.ok()) return Fail(DataExitCode(trainer.status()), trainer.status());
  if (spec->is_chief()) std::fputs((*trainer)->model().Summary().c_str(), stdout);

  std::unique_ptr<coordination::CoordinationServer> server;
  if (spec->is_chief()) {
    coordination::ServerOptions sopts;
    sopts.address = self.ToString();
    for (const auto& t : spec->training_tasks()) sopts.expected_tasks.push_back(t.ToString());
    sopts.reference_job_json = job->CanonicalJson();
    sopts.heartbeat_timeout = std::chrono::milliseconds(settings->heartbeat_timeout_ms);
    auto started = coordination::CoordinationServer::Start(sopts);
    if (!started.ok()) return Fail(kExitRendezvous, started.status());
    server = std::move(started).value();
    RT_LOG(INFO) << "coordination service listening on " << self.ToString();
  }

  coordination::ClientOptions copts;
  copts.service_address = chief.ToString();
  copts.task = g_task;
  copts.incarnation = std::random_device{}() * 0x100000000ULL + std::random_device{}();
  coordination::CoordinationClient client(copts);
  Deadline rendezvous = Deadline::AfterSeconds(settings->rendezvous_timeout_s);
  Status st = client.Register(job->CanonicalJson(), rendezvous);
  if (!st.ok()) {
    bool refused = st.code() == Code::kPermissionDenied || st.code() == Code::kInvalidArgument;
    return Fail(refused ? kExitBadConfig : kExitRendezvous, st);
  }
  st = client.WaitForAll(rendezvous);
  if (!st.ok()) return Fail(kExitRendezvous, st);
  RT_LOG(INFO) << "all " << n << " tasks registered";

  FailureRelay relay;
  client.StartHeartbeat(std::chrono::milliseconds(settings->heartbeat_interval_ms),
                        std::chrono::milliseconds(settings->heartbeat_timeout_ms),
                        [&relay](const std::string& why) { relay.Fail(why); });

  CommunicatorOptions comm_opts;
  comm_opts.implementation = *impl;
  comm_opts.timeout = topts.collective_timeout;
  comm_opts.listen_host = settings->data_host.empty() ? self.host : settings->data_host;
  comm_opts.transport = settings->transport == "tcp" ? Transport::kTcp : Transport::kAuto;
  comm_opts.chunk_bytes = static_cast<size_t>(settings->chunk_bytes);
  PrefixStore ring_store(&client, "ring/0/");
  auto comm = CreateCommunicator(comm_opts, rank, n, &ring_store);
  if (!comm.ok()) {
    bool config_problem = comm.status().code() == Code::kUnimplemented || comm.status().code() == Code::kInvalidArgument;
    return Fail(config_problem ? kExitBadConfig : kExitRendezvous, comm.status());
  }
  relay.Attach(comm->get());
  RT_LOG(INFO) << "ring of " << n << " formed (" << (*comm)->backend_name() << ")";

  st = (*trainer)->Fit(comm->get());
  if (st.ok() && !job->eval_data.is_null()) st = (*trainer)->Evaluate(comm->get()).status();
  if (!st.ok()) {
    std::string why = relay.failure();
    if (!why.empty() && st.message().find(why) == std::string::npos) st = st.WithContext(why);
    return Fail(st.code() == Code::kInvalidArgument ? kExitBadConfig : kExitPeerFailure, st);
  }
  st = (*trainer)->SaveModel();
  if (!st.ok()) return Fail(kExitCheckpoint, st);

  relay.Attach(nullptr);
  client.StopHeartbeat();
  st = client.Shutdown(Deadline::AfterSeconds(settings->shutdown_timeout_s));
  if (!st.ok()) RT_LOG(WARNING) << "orderly shutdown: " << st.ToString();
  if (server) {
    st = server->WaitForShutdown(Deadline::AfterSeconds(settings->shutdown_timeout_s));
    if (!st.ok()) RT_LOG(WARNING) << "orderly shutdown: " << st.ToString();
    server->Stop();
  }
  RT_LOG(INFO) << "done";
  return kExitOk;
}

}  // namespace ringtrain::cli
