#include "cluster_session.h"

#include <random>

#include "common/exit_codes.h"
#include "common/logging.h"

namespace ringtrain::cli {

void FailureRelay::Fail(const std::string& why) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!failure_.empty()) return;
  failure_ = why;
  RT_LOG(ERROR) << "cluster failure: " << why;
  if (comm_ != nullptr) comm_->Abort(why);
}

void FailureRelay::Attach(Communicator* comm) {
  std::lock_guard<std::mutex> lock(mu_);
  comm_ = comm;
  if (comm_ != nullptr && !failure_.empty()) comm_->Abort(failure_);
}

std::string FailureRelay::failure() {
  std::lock_guard<std::mutex> lock(mu_);
  return failure_;
}

ClusterSession::ClusterSession(const config::ClusterSpec& spec, const config::Settings& settings)
    : spec_(spec), settings_(settings) {}

ClusterSession::~ClusterSession() {
  relay_.Attach(nullptr);
  if (client_) client_->StopHeartbeat();
  if (server_) server_->Stop();
}

StatusOr<std::unique_ptr<ClusterSession>> ClusterSession::Join(const config::ClusterSpec& spec,
                                                               const config::Settings& settings,
                                                               const std::string& job_json, int* exit_code) {
  *exit_code = kExitRendezvous;
  std::unique_ptr<ClusterSession> s(new ClusterSession(spec, settings));
  const config::HostPort self = spec.address(spec.task());
  const config::HostPort chief = spec.address(spec.chief());
  if (spec.is_chief()) {
    coordination::ServerOptions sopts;
    sopts.address = self.ToString();
    for (const auto& t : spec.training_tasks()) sopts.expected_tasks.push_back(t.ToString());
    sopts.reference_job_json = job_json;
    sopts.heartbeat_timeout = std::chrono::milliseconds(settings.heartbeat_timeout_ms);
    auto started = coordination::CoordinationServer::Start(sopts);
    if (!started.ok()) {
      if (started.status().code() == Code::kInvalidArgument) *exit_code = kExitBadConfig;
      return started.status();
    }
    s->server_ = std::move(started).value();
  }

  coordination::ClientOptions copts;
  copts.service_address = chief.ToString();
  copts.task = spec.task().ToString();
  copts.incarnation = std::random_device{}() * 0x100000000ULL + std::random_device{}();
  s->client_ = std::make_unique<coordination::CoordinationClient>(copts);
  Deadline rendezvous = Deadline::AfterSeconds(settings.rendezvous_timeout_s);
  Status st = s->client_->Register(job_json, rendezvous);
  if (!st.ok()) {
    bool refused = st.code() == Code::kPermissionDenied || st.code() == Code::kInvalidArgument;
    if (refused) *exit_code = kExitBadConfig;
    return st;
  }
  RT_RETURN_IF_ERROR(s->client_->WaitForAll(rendezvous));
  RT_LOG(INFO) << "all " << spec.num_workers() << " tasks registered";

  ClusterSession* raw = s.get();
  s->client_->StartHeartbeat(std::chrono::milliseconds(settings.heartbeat_interval_ms),
                             std::chrono::milliseconds(settings.heartbeat_timeout_ms),
                             [raw](const std::string& why) { raw->relay_.Fail(why); });
  *exit_code = kExitOk;
  return s;
}

StatusOr<std::unique_ptr<Communicator>> ClusterSession::CreateCommunicator(CommunicatorOptions options,
                                                                           int generation, int* exit_code) {
  *exit_code = kExitRendezvous;
  options.listen_host = settings_.data_host.empty() ? spec_.address(spec_.task()).host : settings_.data_host;
  store_ = std::make_unique<PrefixStore>(client_.get(), "ring/" + std::to_string(generation) + "/");
  auto comm = ::ringtrain::CreateCommunicator(options, rank(), size(), store_.get());
  if (!comm.ok()) {
    Code c = comm.status().code();
    if (c == Code::kUnimplemented || c == Code::kInvalidArgument || c == Code::kFailedPrecondition) {
      *exit_code = kExitBadConfig;
    }
    return comm.status();
  }
  relay_.Attach(comm->get());
  *exit_code = kExitOk;
  return comm;
}

void ClusterSession::Leave() {
  relay_.Attach(nullptr);
  client_->StopHeartbeat();
  Status st = client_->Shutdown(Deadline::AfterSeconds(settings_.shutdown_timeout_s));
  if (!st.ok()) RT_LOG(WARNING) << "orderly shutdown: " << st.ToString();
  if (server_) {
    st = server_->WaitForShutdown(Deadline::AfterSeconds(settings_.shutdown_timeout_s));
    if (!st.ok()) RT_LOG(WARNING) << "orderly shutdown: " << st.ToString();
    server_->Stop();
  }
}

}  // namespace ringtrain::cli
