// The chief's coordination service over gRPC (proto/coordination.proto):
// registration with incarnation ids and job-hash checks, a key-value
// store, named barriers, heartbeats with failure detection, generations (the ring's
// rendezvous, formed again after a failure), and orderly shutdown.
//
// Implementation: gRPC's callback API; handlers never block. The waits (Rendezvous,
// KvGet, Barrier) are long polls the server holds for at most 2 s; the client polls
// again until its own deadline. Also serves the standard grpc.health.v1 service.
// Every handler first checks the caller (CallGuard: cluster secret proof and address).
// Re-registration with a new incarnation (a restarted task) is accepted and logged;
// the old process's heartbeats are then answered with ABORTED, and the generation it
// was a member of is broken (see service_state.h for the rules).
//
// Threading: all methods are thread-safe. Destruction stops the server (bounded).
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/deadline.h"
#include "common/status.h"
#include "coordination/service_state.h"
#include "coordination/straggler_detector.h"
#include "coordination/tls.h"
#include "proto/coordination.pb.h"
#include "security/cluster_secret.h"

namespace ringtrain::coordination {

struct ServerOptions {
  // Where to listen: "host:port" (the chief's own TF_CONFIG address).
  std::string address;
  // The tasks that must register, e.g. {"chief:0", "worker:0", "worker:1"}.
  std::vector<std::string> expected_tasks;
  // The chief's job configuration, canonical JSON (nlohmann dump of the parsed job).
  // A task whose job differs is refused with PERMISSION_DENIED naming the first
  // differing field as a JSON pointer ("/optimizer/learning_rate").
  std::string reference_job_json;
  // A task that sends no heartbeat for this long is declared failed. A task is
  // watched from its first heartbeat on (not from registration), a task that called
  // Shutdown is not watched, and a failure breaks the current generation (every task's
  // later heartbeats are told) and evicts the failed process (its heartbeats are
  // answered ABORTED) until a new incarnation registers. Each failure is logged once.
  std::chrono::milliseconds heartbeat_timeout{std::chrono::seconds(10)};

  // Who gets in (call_guard.h). With a configured secret every call must carry proof of
  // it (UNAUTHENTICATED otherwise); calls from addresses that are not the cluster's
  // hosts are refused with PERMISSION_DENIED. Each refusal is logged once per caller.
  security::ClusterSecret cluster_secret;
  // The hosts of every task in TF_CONFIG. Empty admits loopback callers only.
  std::vector<std::string> cluster_hosts;
  // false admits any address (the secret is still checked): callers behind NAT.
  bool check_peer_address = true;
  // Listen on every interface ("[::]:port", the port of `address`) instead of
  // `address`'s host (containers whose TF_CONFIG name is not a local address).
  bool bind_all = false;
  // Mutual TLS when enabled (tls.h).
  TlsCredentials tls;
  // For GetStatus (status_board.h): each expected task's TF_CONFIG "host:port", in the
  // order of expected_tasks (may be empty), and when a rank is named a straggler.
  std::vector<std::string> task_hosts;
  StragglerSettings stragglers;
  // Rows for tasks outside the ring, added to every GetStatus answer (coordination_service.h).
  std::function<void(GetStatusResponse*)> status_extras;
  // Elastic membership (service_state.h): heartbeats tell a present task which absent
  // tasks its process should host. expected_tasks gives the rank order.
  ElasticPolicy elastic;
  // Tasks known to be gone when the service starts (a successor's: the chief's task).
  std::vector<std::string> elastic_lost;
};

class CoordinationServer {
 public:
  // Binds and starts serving. UNAVAILABLE if the address cannot be bound (says which).
  static StatusOr<std::unique_ptr<CoordinationServer>> Start(const ServerOptions& options);
  ~CoordinationServer();  // Stop() if not stopped; never throws

  // Waits until every expected task has called Shutdown, or the deadline passes
  // (DEADLINE_EXCEEDED naming the tasks that did not).
  Status WaitForShutdown(Deadline deadline);
  // Stops serving; in-flight long polls return UNAVAILABLE promptly.
  void Stop();
  int port() const;  // the bound port

 private:
  CoordinationServer();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ringtrain::coordination
