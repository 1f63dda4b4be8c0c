#include "cluster/cluster_session.h"

#include <random>

#include "common/logging.h"

namespace ringtrain::cluster {

ClusterSession::ClusterSession(const config::ClusterSpec& spec, const config::Settings& settings)
    : spec_(spec), settings_(settings) {}

ClusterSession::~ClusterSession() {
  relay_.Detach();
  if (client_) client_->StopHeartbeat();
  if (server_) server_->Stop();
}

namespace {

// The coordination service's options for a service at `address` (the chief's, or its
// successor's own TF_CONFIG address).
coordination::ServerOptions ServiceOptions(const config::ClusterSpec& spec, const config::Settings& settings,
                                           const std::string& job_json, const SessionSecurity& security,
                                           std::function<void(coordination::GetStatusResponse*)> status_extras,
                                           const SessionElastic& elastic, const std::string& address) {
  coordination::ServerOptions sopts;
  sopts.address = address;
  for (const auto& t : spec.training_tasks()) {
    sopts.expected_tasks.push_back(t.ToString());
    sopts.task_hosts.push_back(spec.address(t).ToString());
  }
  sopts.stragglers.share = settings.straggler_share;
  sopts.stragglers.steps = settings.straggler_steps;
  sopts.reference_job_json = job_json;
  sopts.status_extras = std::move(status_extras);
  sopts.elastic = elastic.policy;
  sopts.heartbeat_timeout = std::chrono::milliseconds(settings.heartbeat_timeout_ms);
  sopts.cluster_secret = security.cluster_secret;
  sopts.tls = security.tls;
  sopts.bind_all = settings.bind_all;
  sopts.check_peer_address = settings.check_peer_address;
  // Every task's host may call, evaluators included (they read the store too).
  for (const auto& [job, addresses] : spec.jobs()) {
    for (const auto& a : addresses) sopts.cluster_hosts.push_back(a.host);
  }
  return sopts;
}

}  // namespace

StatusOr<std::unique_ptr<ClusterSession>> ClusterSession::Join(const config::ClusterSpec& spec,
                                                               const config::Settings& settings,
                                                               const std::string& job_json,
                                                               const SessionSecurity& security,
                                                               std::function<void(coordination::GetStatusResponse*)>
                                                                   status_extras,
                                                               const SessionElastic& elastic) {
  std::unique_ptr<ClusterSession> s(new ClusterSession(spec, settings));
  const config::HostPort self = spec.address(spec.task());
  const config::HostPort chief = spec.address(spec.chief());
  const bool succession = elastic.policy.enabled && elastic.coordinator != nullptr;
  // Where the service is: the chief's, unless it moved to a successor (elastic).
  std::string service = succession ? elastic.coordinator->Get() : std::string();
  if (succession && service.empty()) {
    // A task (re)joining a cluster whose chief may be gone for good: the service is the
    // chief's if it answers, else the first successor's that does; none: the chief's
    // (a cluster starting up). A returning former chief thus joins its successor.
    coordination::ClientOptions probe;
    probe.task = spec.task().ToString();
    probe.cluster_secret = security.cluster_secret;
    probe.tls = security.tls;
    const auto quick = std::chrono::milliseconds(300);
    if (!spec.is_chief() && coordination::ServiceAnswersAt(probe, chief.ToString(), quick)) {
      service = chief.ToString();
    } else {
      for (size_t r = 1; r < spec.training_tasks().size() && service.empty(); ++r) {
        const auto& t = spec.training_tasks()[r];
        if (t == spec.task()) continue;
        if (coordination::ServiceAnswersAt(probe, spec.address(t).ToString(), quick)) {
          service = spec.address(t).ToString();
          RT_LOG(WARNING) << spec.task().ToString() << " joins the coordination service at " << t.ToString() << " ("
                          << service << "): the chief's moved there (elastic chief succession)";
          elastic.coordinator->Set(service);
        }
      }
    }
  }
  if (service.empty()) service = chief.ToString();
  if (spec.is_chief() && service == chief.ToString()) {
    auto started = coordination::CoordinationServer::Start(
        ServiceOptions(spec, settings, job_json, security, status_extras, elastic, self.ToString()));
    if (!started.ok()) return started.status().About(Subject::kCluster);
    s->server_ = std::move(started).value();
  }

  coordination::ClientOptions copts;
  copts.service_address = service;
  copts.task = spec.task().ToString();
  copts.incarnation = std::random_device{}() * 0x100000000ULL + std::random_device{}();
  copts.cluster_secret = security.cluster_secret;
  copts.tls = security.tls;
  copts.on_adopt = elastic.on_adopt;
  if (succession) {
    for (size_t r = 1; r < spec.training_tasks().size(); ++r) {
      const auto& t = spec.training_tasks()[r];
      copts.successors.emplace_back(t.ToString(), spec.address(t).ToString());
    }
    ClusterSession* raw = s.get();
    copts.become_coordinator = [raw, spec, settings, job_json, security, status_extras, elastic]() -> Status {
      const std::string own = spec.address(spec.task()).ToString();
      RT_LOG(WARNING) << "the chief's coordination service is gone: " << spec.task().ToString()
                      << " takes it over at " << own << " (elastic chief succession)";
      auto sopts = ServiceOptions(spec, settings, job_json, security, status_extras, elastic, own);
      sopts.elastic_lost = {spec.chief().ToString()};  // its rank is hosted without the start-up grace
      RT_ASSIGN_OR_RETURN(raw->server_, coordination::CoordinationServer::Start(sopts));
      return Status::Ok();
    };
    copts.on_coordinator = [ref = elastic.coordinator](const std::string& address) { ref->Set(address); };
  }
  s->client_ = std::make_unique<coordination::CoordinationClient>(copts);
  Deadline rendezvous = Deadline::AfterSeconds(settings.rendezvous_timeout_s);
  Status st = s->client_->Register(job_json, rendezvous);
  if (!st.ok()) return st.About(Subject::kCluster);
  ClusterSession* raw = s.get();
  s->client_->StartHeartbeat(std::chrono::milliseconds(settings.heartbeat_interval_ms),
                             std::chrono::milliseconds(settings.heartbeat_timeout_ms),
                             [raw](const coordination::ClusterEvent& e) { raw->relay_.OnEvent(e); });
  return s;
}

StatusOr<coordination::RendezvousResult> ClusterSession::Rendezvous(int64_t last_generation,
                                                                    const std::string& reason) {
  auto r = client_->Rendezvous(last_generation, reason, Deadline::AfterSeconds(settings_.rendezvous_timeout_s));
  if (!r.ok()) {
    // ABORTED: the service declared this process failed or replaced; it must exit.
    return r.status().About(r.status().code() == Code::kAborted ? Subject::kPeers : Subject::kCluster);
  }
  if (!r->job_finished) RT_LOG(INFO) << "generation " << r->generation << ": all " << size() << " tasks are here";
  return r;
}

StatusOr<std::unique_ptr<collective::Communicator>> ClusterSession::CreateCommunicator(collective::CommunicatorOptions options,
                                                                           int64_t generation) {
  options.listen_host = settings_.data_host.empty() ? spec_.address(spec_.task()).host : settings_.data_host;
  store_ = std::make_unique<store::PrefixStore>(client_.get(), "ring/" + std::to_string(generation) + "/");
  auto comm = collective::CreateCommunicator(options, rank(), size(), store_.get());
  if (!comm.ok()) return comm.status().About(Subject::kCluster);
  relay_.Attach(comm->get(), generation);
  return comm;
}

bool ClusterSession::Leave() {
  relay_.Detach();
  client_->StopHeartbeat();
  Status st = client_->Shutdown(Deadline::AfterSeconds(settings_.shutdown_timeout_s));
  if (!st.ok()) RT_LOG(WARNING) << "orderly shutdown: " << st.ToString();
  if (server_) {
    st = server_->WaitForShutdown(Deadline::AfterSeconds(settings_.shutdown_timeout_s));
    if (!st.ok()) RT_LOG(WARNING) << "orderly shutdown: " << st.ToString();
    server_->Stop();
    return st.ok();
  }
  return true;
}

}  // namespace ringtrain::cluster
