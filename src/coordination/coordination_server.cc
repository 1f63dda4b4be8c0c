#include "coordination/coordination_server.h"

#include <mutex>

#include <grpcpp/grpcpp.h>

#include "common/logging.h"
#include "coordination/call_guard.h"
#include "coordination/coordination_service.h"
#include "coordination/generic_call.h"
#include "coordination/job_diff.h"
#include "coordination/service_front.h"
#include "coordination/service_state.h"

namespace ringtrain::coordination {

struct CoordinationServer::Impl {
  std::string address;
  int port = 0;
  // Declared before server so that they are destroyed after it: gRPC requires a service
  // to outlive the server it is registered with.
  std::unique_ptr<CoordinationServiceImpl> service;
  std::unique_ptr<ServiceFront> front;
  std::unique_ptr<grpc::Server> server;
  std::mutex stop_mu;
  bool stopped = false;  // guarded by stop_mu
};

CoordinationServer::CoordinationServer() : impl_(std::make_unique<Impl>()) {}

CoordinationServer::~CoordinationServer() { Stop(); }

StatusOr<std::unique_ptr<CoordinationServer>> CoordinationServer::Start(const ServerOptions& options) {
  if (options.expected_tasks.empty()) {
    return InvalidArgumentError("the coordination service needs the cluster's task list; TF_CONFIG lists no tasks");
  }
  if (options.heartbeat_timeout.count() <= 0) {
    return InvalidArgumentError("heartbeat timeout must be positive, got " +
                                std::to_string(options.heartbeat_timeout.count()) + " ms");
  }
  if (!options.reference_job_json.empty()) {
    RT_RETURN_IF_ERROR(ValidateJobJson(options.reference_job_json, "the chief's"));
  }

  std::unique_ptr<CoordinationServer> server(new CoordinationServer());
  Impl& impl = *server->impl_;
  impl.address = options.address;
  CallGuardOptions guard;
  guard.secret = options.cluster_secret;
  guard.cluster_hosts = options.cluster_hosts;
  guard.check_peer_address = options.check_peer_address;
  ServiceState state(options.expected_tasks, options.reference_job_json, options.heartbeat_timeout);
  if (options.elastic.enabled) state.SetElastic(options.elastic, options.expected_tasks, std::chrono::steady_clock::now(),
                                               options.elastic_lost);
  impl.service = std::make_unique<CoordinationServiceImpl>(
      std::move(state), options.heartbeat_timeout, StatusBoard(options.expected_tasks, options.task_hosts, options.stragglers),
      options.status_extras);
  impl.front = std::make_unique<ServiceFront>(impl.service.get(), std::move(guard));

  if (options.bind_all) {
    RT_LOG(INFO) << "RINGTRAIN_BIND_ALL: the coordination service listens on every interface, not only on "
                 << options.address;
  }
  ListeningServer listening = StartGenericServer(options.address, options.bind_all, options.tls, impl.front.get());
  if (!listening.server) {
    return UnavailableError("cannot listen on " + listening.address +
                            ": address in use or not local; check that no other chief runs there and that the "
                            "chief's TF_CONFIG address names this machine" +
                            (options.tls.enabled() ? std::string(" (or that --tls_cert and --tls_key are a matching "
                                                                 "certificate and private key)")
                                                   : std::string()));
  }
  impl.server = std::move(listening.server);
  impl.port = listening.port;
  impl.service->StartTimer();
  impl.address = listening.address;  // with port 0, the port the kernel picked
  RT_LOG(INFO) << "coordination service listening on " << impl.address << " for " << options.expected_tasks.size()
               << " tasks" << (options.tls.enabled() ? ", mutual TLS" : "")
               << (options.cluster_secret.configured() ? ", cluster secret " + options.cluster_secret.Fingerprint()
                                                       : std::string(", no cluster secret"))
               << (options.check_peer_address ? ", cluster addresses only" : ", any address");
  return server;
}

Status CoordinationServer::WaitForShutdown(Deadline deadline) { return impl_->service->WaitForShutdown(deadline); }

void CoordinationServer::Stop() {
  if (!impl_) return;
  std::lock_guard<std::mutex> lock(impl_->stop_mu);
  if (impl_->stopped) return;
  impl_->stopped = true;
  // Answer the parked long polls first: gRPC's Shutdown waits for every callback
  // request to finish, and those would otherwise hold it until their wait ends.
  if (impl_->service) impl_->service->Stop();
  if (impl_->server) {
    impl_->server->Shutdown(std::chrono::system_clock::now() + std::chrono::milliseconds(500));
    RT_LOG(INFO) << "coordination service on " << impl_->address << " stopped";
  }
}

int CoordinationServer::port() const { return impl_->port; }

}  // namespace ringtrain::coordination
